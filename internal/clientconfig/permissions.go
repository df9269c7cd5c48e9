package clientconfig

import (
	"fmt"
	"slices"
	"strings"
)

// claudeName is how Claude Code writes a server name inside tool names and
// permission rules: every character outside [A-Za-z0-9_-] becomes '_'.
func claudeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// PermissionRule converts one Claude Code permission entry into an
// mcpwarden rule: mcp__github__create_issue is mcp:github:create_issue, and
// mcp__github and mcp__github__* are mcp:github:*. names maps client entry
// names to server keys; the longest known server name that prefixes the
// entry wins, so server names holding "__" are split right. ok is false for
// entries that are not about MCP tools (Bash(...), Read(...)) or that cannot
// be expressed, with the reason.
//
// An entry about mcpwarden's own tools (mcp__mcpwarden__github__create_issue,
// from a Claude Code already pointed at mcpwarden) is about the tool behind
// the wire name: mcp:github:create_issue. One about all of them
// (mcp__mcpwarden, mcp__mcpwarden__*) only lets them through Claude Code's
// prompt and is never a rule: as an allow it would allow everything.
func PermissionRule(entry string, names map[string]string) (rule string, ok bool, why string) {
	e := strings.TrimSpace(entry)
	rest, isMCP := strings.CutPrefix(e, "mcp__")
	if !isMCP || rest == "" {
		return "", false, "not an MCP tool permission"
	}
	if wire, own := strings.CutPrefix(rest, claudeName(DefaultEntryName)); own && (wire == "" || strings.HasPrefix(wire, "__")) {
		wire = strings.TrimPrefix(wire, "__")
		if wire == "" || wire == "*" {
			return "", false, "it lets mcpwarden's tools through Claude Code's prompt; mcpwarden's policy decides them"
		}
		keys := make(map[string]string, len(names))
		for _, k := range names {
			keys[k] = k
		}
		return PermissionRule("mcp__"+wire, keys)
	}
	var key, tool string
	best := -1
	for name, k := range names {
		c := claudeName(name)
		if (rest == c || strings.HasPrefix(rest, c+"__")) && len(c) > best {
			best, key, tool = len(c), k, strings.TrimPrefix(strings.TrimPrefix(rest, c), "__")
		}
	}
	if best < 0 {
		var server string
		server, tool, _ = strings.Cut(rest, "__")
		key = ServerKey(server)
		why = fmt.Sprintf("server %q is not in the imported config", server)
	}
	if tool == "" {
		tool = "*"
	}
	if strings.ContainsAny(tool, ":()") {
		return "", false, "the tool name holds characters a rule cannot express"
	}
	return "mcp:" + key + ":" + tool, true, why
}

// permissions converts Claude Code permission entries into rules, noting
// every entry that was skipped.
func (c *converter) permissions(p Permissions, names map[string]string) (Permissions, []string) {
	var out Permissions
	var skipped []string
	conv := func(list string, in []string) []string {
		var rules []string
		for _, e := range in {
			r, ok, why := PermissionRule(e, names)
			if !ok {
				skipped = append(skipped, fmt.Sprintf("permissions.%s: %q (%s)", list, e, why))
				continue
			}
			if why != "" {
				c.notef("permissions.%s: %q became %q, but %s", list, e, r, why)
			}
			if !slices.Contains(rules, r) {
				rules = append(rules, r)
			}
		}
		return rules
	}
	out.Deny = conv("deny", p.Deny)
	out.Ask = conv("ask", p.Ask)
	out.Allow = conv("allow", p.Allow)
	if !p.empty() && len(out.Deny)+len(out.Ask)+len(out.Allow) > 0 {
		c.notef("the converted permissions are enforced by mcpwarden now; Claude Code's own mcp__<server>__ entries no longer match, as the tools reach it as mcp__mcpwarden__<server>__<tool>")
	}
	return out, skipped
}
