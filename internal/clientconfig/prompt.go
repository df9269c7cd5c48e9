package clientconfig

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/mcpwarden/mcpwarden/internal/enumtext"
)

// A ClientPrompt says whether a client's own permission prompt still asks
// before each of mcpwarden's tools. The zero value, PromptSkip, is what a
// careful user wants: mcpwarden decides every call, asks the human itself
// for those its policy says ask, and a second prompt that knows nothing of
// the policy only teaches clicking through.
type ClientPrompt uint8

// ClientPrompt values.
const (
	// PromptSkip lets mcpwarden's tools through the client's prompt.
	PromptSkip ClientPrompt = iota
	// PromptKeep leaves the client's prompt as it is: a call may be asked
	// twice, by the client and by mcpwarden.
	PromptKeep
)

var promptNames = enumtext.Names[ClientPrompt]{PromptSkip: "skip", PromptKeep: "keep"}

// String returns "skip" or "keep", or "ClientPrompt(N)" for another value.
func (p ClientPrompt) String() string { return promptNames.String(p, "ClientPrompt") }

// Set parses "skip" or "keep"; it makes *ClientPrompt a flag value.
func (p *ClientPrompt) Set(s string) error {
	if v, ok := promptNames.Lookup(s); ok {
		*p = v
		return nil
	}
	return fmt.Errorf("%q is not skip or keep", s)
}

// Type names the flag value's type in help output.
func (p *ClientPrompt) Type() string { return "skip|keep" }

// ClaudePermission is the Claude Code permission entry that covers every
// tool of the client entry name ("" = DefaultEntryName): mcp__mcpwarden.
func ClaudePermission(name string) string {
	return "mcp__" + claudeName(cmp.Or(name, DefaultEntryName))
}

// AllowInClaudeSettings returns Claude Code settings data with perm added
// to permissions.allow, every other key kept in its place; changed is false
// when perm is already there. Empty data is an empty settings file. Like
// Rewrite, it does not keep comments.
func AllowInClaudeSettings(data []byte, perm string) (out []byte, changed bool, err error) {
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}")
	}
	top, order, err := topLevel(stripJSONC(data))
	if err != nil {
		return nil, false, err
	}
	perms, porder := map[string]json.RawMessage{}, []string(nil)
	if raw, ok := top["permissions"]; ok {
		if perms, porder, err = topLevel(raw); err != nil {
			return nil, false, fmt.Errorf("permissions: %w", err)
		}
	}
	var allow []json.RawMessage
	if raw, ok := perms["allow"]; ok {
		if err := json.Unmarshal(raw, &allow); err != nil {
			return nil, false, fmt.Errorf("permissions.allow: %w", err)
		}
	}
	entry, _ := json.Marshal(perm) // a string always marshals
	if slices.ContainsFunc(allow, func(r json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(r), entry) }) {
		return data, false, nil
	}
	allow = append(allow, entry)
	if perms["allow"], err = json.Marshal(allow); err != nil {
		return nil, false, err
	}
	top["permissions"] = object(perms, appendKey(porder, "allow"))
	var b bytes.Buffer
	if err := json.Indent(&b, object(top, appendKey(order, "permissions")), "", "  "); err != nil {
		return nil, false, err
	}
	b.WriteByte('\n')
	return b.Bytes(), true, nil
}

// openCodeAsks are OpenCode permission actions that stop a tool call.
var openCodeAsks = []string{`"ask"`, `"deny"`}

// AllowInOpenCode returns an OpenCode config whose permission lets the
// tools of the client entry name ("" = DefaultEntryName), which OpenCode
// calls <name>_<tool>, run without its prompt: a "<name>_*": "allow" rule
// last (OpenCode applies the last matching rule). changed is false when
// OpenCode would not ask for them anyway (no permission key, or one whose
// catch-all allows).
func AllowInOpenCode(data []byte, name string) (out []byte, changed bool, err error) {
	top, order, err := topLevel(stripJSONC(data))
	if err != nil {
		return nil, false, err
	}
	raw, ok := top["permission"]
	if !ok {
		return data, false, nil
	}
	pattern := cmp.Or(name, DefaultEntryName) + "_*"
	var rules map[string]json.RawMessage
	var rorder []string
	switch t := bytes.TrimSpace(raw); {
	case len(t) > 0 && t[0] == '"':
		if !slices.Contains(openCodeAsks, string(t)) {
			return data, false, nil
		}
		rules, rorder = map[string]json.RawMessage{"*": t}, []string{"*"}
	default:
		if rules, rorder, err = topLevel(raw); err != nil {
			return nil, false, fmt.Errorf("permission: %w", err)
		}
		catchAll := bytes.TrimSpace(rules["*"])
		if string(bytes.TrimSpace(rules[pattern])) == `"allow"` && rorder[len(rorder)-1] == pattern ||
			!slices.Contains(openCodeAsks, string(catchAll)) {
			return data, false, nil
		}
		rorder = slices.DeleteFunc(rorder, func(k string) bool { return k == pattern })
	}
	rules[pattern] = json.RawMessage(`"allow"`)
	rorder = append(rorder, pattern)
	top["permission"] = object(rules, rorder)
	var b bytes.Buffer
	if err := json.Indent(&b, object(top, order), "", "  "); err != nil {
		return nil, false, err
	}
	b.WriteByte('\n')
	return b.Bytes(), true, nil
}

// PromptAdvice says how to let the tools of the client entry name through
// the prompt of a client whose settings import does not write (Claude
// Desktop, Cursor, VS Code), or that the entry itself does it (Gemini
// CLI), or how the client names the tools and where its asks go (Codex);
// "" for the others.
func PromptAdvice(f Format, name string) string {
	name = cmp.Or(name, DefaultEntryName)
	switch f {
	case ClaudeDesktop:
		return fmt.Sprintf("Claude Desktop asks before each tool it has not been told to allow: choose \"Allow always\" for the %s tools, since mcpwarden decides every call and asks you itself", name)
	case Cursor:
		return fmt.Sprintf("Cursor asks before each MCP tool not on its allowlist: add %q to its MCP allowlist (Settings, or mcpAllowlist in ~/.cursor/permissions.json, which replaces the in-app list), since mcpwarden decides every call and asks you itself", name+":*")
	case VSCode:
		return fmt.Sprintf("VS Code asks before each MCP tool call: in its confirmation choose to always allow the tools of the %s server, since mcpwarden decides every call and asks you itself", name)
	case Gemini:
		return fmt.Sprintf("Gemini CLI asks before each tool of a server it does not trust: the %s entry has \"trust\": true (--client-prompt keep leaves it out), since mcpwarden decides every call and asks you itself", name)
	case Codex:
		return fmt.Sprintf("Codex shows mcpwarden's tools as mcp__%s__<server>__<tool>, with each - turned into _; mcpwarden's rules and asks name them mcp:<server>:<tool>. codex exec declines every question mcpwarden would ask it, so asks wait on the approvals page (ask.approvals: local, ask.elicitation: false)", claudeName(name))
	}
	return ""
}

func appendKey(order []string, k string) []string {
	if slices.Contains(order, k) {
		return order
	}
	return append(order, k)
}
