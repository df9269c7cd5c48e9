package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/approvals"
	"github.com/mcpwarden/mcpwarden/rules"

	"github.com/mcpwarden/mcpwarden/internal/textcut"
)

// formTitle starts every approval form mcpwarden sends, so that an
// upstream's own elicitation (always prefixed "[<server>] ") cannot pass
// for one.
const formTitle = "mcpwarden approval:"

// maxValueShown bounds one argument's text on the form; the approvals page
// shows all of it.
const maxValueShown = 2000

// hiddenValue replaces a value under a secret-like key on the form and the
// approvals page.
const hiddenValue = "<hidden: secret-like key>"

// form is the approval form for c: what will run — the canonical tool,
// server, client, principal, the rule that asked, and every argument as
// it will be forwarded, in full up to maxValueShown characters each, with
// each path-like value also in its normalised absolute form when that
// differs. offered are the choices the form offers: a session grant only
// where docs/design.md, "Asking a human", allows one.
func (a *asker) form(c *call, t target) (params mcp.ElicitationParams, offered []string) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s allow this call?\n\nTool: %s\nServer: %s\n", formTitle, c.tool.Canonical, c.tool.Server)
	client := "(unnamed)"
	if c.client != nil {
		client = strings.TrimSpace(c.client.Name + " " + c.client.Version)
	}
	fmt.Fprintf(&b, "Client: %s\nPrincipal: %s\nAsked by: %s in %s\n", client, c.principal, ruleName(c), c.verdict.Gate)
	if c.verdict.Gate == rules.GateFlow {
		// The human is told what the session saw that makes this call
		// risky: the call whose result armed the flow rule.
		fmt.Fprintf(&b, "Because: %s\n", c.verdict.Reason)
	}
	b.WriteString("\nArguments, as they will be forwarded:\n")
	shown := a.shown(c.policy, c.args)
	paths := normalisedPaths(c, t)
	inline := map[string]bool{}
	for _, k := range slices.Sorted(maps.Keys(shown)) {
		fmt.Fprintf(&b, "%s: %s\n", k, cutShown(valueText(shown[k])))
		if v, ok := shown[k].(string); ok && c.policy.IsPathKey(k) {
			if i := slices.IndexFunc(paths, func(p approvals.PathForm) bool { return p.Value == v }); i >= 0 {
				fmt.Fprintf(&b, "  which is %s\n", paths[i].Absolute)
				inline[v] = true
			}
		}
	}
	var rest []approvals.PathForm
	for _, p := range paths {
		if !inline[p.Value] {
			rest = append(rest, p)
		}
	}
	if len(rest) > 0 {
		b.WriteString("\nOther paths, normalised:\n")
		for _, p := range rest {
			fmt.Fprintf(&b, "%s\n  which is %s\n", cutShown(p.Value), p.Absolute)
		}
	}

	offered = []string{"allow_once"}
	names := []string{"Allow once"}
	switch {
	case t.earns && t.pathless:
		offered = append(offered, "allow_session")
		names = append(names, "Allow "+c.tool.Canonical+" with any arguments (calls without paths) for this session")
	case t.earns:
		offered = append(offered, "allow_session", "allow_session_folder")
		names = append(names, "Allow exactly "+strings.Join(t.paths, ", ")+" for this session",
			"Allow anything under "+strings.Join(t.folders, ", ")+" for this session")
	}
	offered = append(offered, "deny", "deny_session")
	names = append(names, "Deny", "Deny "+c.tool.Canonical+" for this session")
	return decisionForm(b.String(), "Allow or deny "+c.tool.Canonical, offered, names), offered
}

// decisionForm is an approval form: message, and one required "decision"
// field whose choices are values, shown as names.
func decisionForm(message, description string, values, names []string) mcp.ElicitationParams {
	return mcp.ElicitationParams{
		Message: message,
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"decision": map[string]any{
					"type":        "string",
					"title":       "Decision",
					"description": description,
					"enum":        values,
					"enumNames":   names,
				},
			},
			"required": []string{"decision"},
		},
	}
}

// shown is a copy of args for a human: every value in full, except the
// values under secret-like keys (audit's vocabulary), at any depth. A
// path-like key is never hidden, even one named like a secret
// (`keyfile`): where a call acts is what the human must see.
func (a *asker) shown(p *rules.Policy, args map[string]any) map[string]any {
	if args == nil {
		return map[string]any{}
	}
	v, _ := a.hide(p, args).(map[string]any)
	return v
}

func (a *asker) hide(p *rules.Policy, v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			if a.secret != nil && a.secret(k) && !p.IsPathKey(k) {
				out[k] = hiddenValue
			} else {
				out[k] = a.hide(p, e)
			}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = a.hide(p, e)
		}
		return out
	}
	return v
}

// valueText is v as JSON, HTML not escaped: a string is quoted, so line
// breaks and quotes inside it are visible.
func valueText(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "(cannot be shown)"
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// cutShown cuts a value too long for the form, saying how much is hidden
// and where to see it whole.
func cutShown(s string) string {
	head, hidden := textcut.Head(s, maxValueShown)
	if hidden == 0 {
		return s
	}
	return fmt.Sprintf("%s… (%d more characters hidden; see the approvals page)", head, hidden)
}

// normalisedPaths lists c's path-like string values whose absolute, clean
// form differs from the value as sent.
func normalisedPaths(c *call, t target) []approvals.PathForm {
	if t.pathless {
		return nil
	}
	var out []approvals.PathForm
	eachPathValue(c.policy, c.args, func(key string, v any) {
		pathStringsOf(v, func(s string) {
			abs, known := c.policy.Paths(rules.Call{Profile: c.profile, Server: c.tool.Server, Tool: c.tool.Name, Arguments: map[string]any{key: s}})
			if known && len(abs) == 1 && abs[0] != s && !slices.ContainsFunc(out, func(p approvals.PathForm) bool { return p.Value == s }) {
				out = append(out, approvals.PathForm{Value: s, Absolute: abs[0]})
			}
		})
	})
	return out
}
