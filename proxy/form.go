package proxy

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/approvals"
	"github.com/mcpwarden/mcpwarden/internal/argview"
	"github.com/mcpwarden/mcpwarden/proxy/ask"
	"github.com/mcpwarden/mcpwarden/rules"
)

// formTitle starts every approval form mcpwarden sends, so that an
// upstream's own elicitation (always prefixed "[<server>] ") cannot pass
// for one.
const formTitle = "mcpwarden approval:"

// maxValueShown bounds one key's or value's text on the form.
const maxValueShown = 2000

// form is the approval form for c: what will run — the canonical tool,
// server, client, principal, the rule that asked, and every argument as
// it will be forwarded, laid out by argview (one line per argument, keys
// and values quoted and escaped, every form of each path on the lines
// under it, undeclared keys under a warning), in full up to maxValueShown
// characters per key and value. offered are the choices the form offers:
// a session grant only where docs/design.md, "Asking a human", allows one.
//
// A form that had to cut something offers only the denials. The ask is
// not on the approvals page while the form is up, and a second form page
// would be a second elicitation the client may not show in order; so the
// human who wants to approve it cancels the form, which is no answer and
// passes the ask on to the approvals page when that is on (it shows the
// whole call), and the form says so, or how to turn the page on.
func (a *asker) form(c *call, t ask.Target) (params mcp.ElicitationParams, offered []string) {
	var b strings.Builder
	if t.Endpoint != "" {
		fmt.Fprintf(&b, "%s %s. Allow it?\n\nRequest: %s\nServer: %s\n", formTitle, connectSummary(c, t), argview.Escape(c.tool.Canonical), argview.Escape(c.tool.Server))
	} else {
		fmt.Fprintf(&b, "%s allow this call?\n\nTool: %s\nServer: %s\n", formTitle, argview.Escape(c.tool.Canonical), argview.Escape(c.tool.Server))
	}
	client := "(unnamed)"
	if c.client != nil {
		client = strings.TrimSpace(c.client.Name + " " + c.client.Version)
	}
	fmt.Fprintf(&b, "Client: %s\nPrincipal: %s\nAsked by: %s in %s\n", argview.Escape(client), argview.Escape(c.principal), argview.Escape(ruleName(c)), argview.Escape(c.verdict.Gate))
	if c.verdict.Gate == rules.GateFlow {
		// The human is told what the session saw that makes this call
		// risky: the call whose result armed the flow rule.
		fmt.Fprintf(&b, "Because: %s\n", argview.Escape(c.verdict.Reason))
	}
	view := argview.Render(a.viewOf(c), maxValueShown)
	b.WriteString("\n")
	for _, l := range view.Lines {
		b.WriteString(l)
		b.WriteString("\n")
	}

	canonical := argview.Escape(c.tool.Canonical)
	if view.Cut > 0 {
		fmt.Fprintf(&b, "\n%d characters are not shown on this form, so it cannot approve this call. ", view.Cut)
		if a.pageOn() {
			b.WriteString("To approve it, cancel this form to see the whole call on the approvals page and answer there.\n")
		} else {
			b.WriteString("To approve calls this long, turn on the approvals page (ask.approvals: local), which shows them whole.\n")
		}
		offered = []string{"deny", "deny_session"}
		return ask.DecisionForm(b.String(), "Deny "+canonical, offered, []string{"Deny", "Deny " + canonical + " for this session"}), offered
	}

	offered = []string{"allow_once"}
	names := []string{"Allow once"}
	switch {
	case t.Earns && t.Endpoint != "":
		offered = append(offered, "allow_session")
		names = append(names, "Allow connections to "+argview.Escape(t.Endpoint)+" for this session")
	case t.Earns && t.Pathless:
		offered = append(offered, "allow_session")
		names = append(names, "Allow "+canonical+" with any arguments (calls without paths) for this session")
	case t.Earns:
		offered = append(offered, "allow_session", "allow_session_folder")
		names = append(names, "Allow exactly "+quoteAll(t.Paths)+" for this session",
			"Allow anything under "+quoteAll(t.Folders)+" for this session")
	}
	offered = append(offered, "deny", "deny_session")
	names = append(names, "Deny", "Deny "+canonical+" for this session")
	return ask.DecisionForm(b.String(), "Allow or deny "+canonical, offered, names), offered
}

// quoteAll is paths quoted and escaped (argview.Quote), comma-separated.
func quoteAll(paths []string) string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = argview.Quote(p)
	}
	return strings.Join(q, ", ")
}

// pageOn reports whether the approvals page is among the resolvers: the
// only resolver that can say where it is (an approvals.Locator).
func (a *asker) pageOn() bool {
	for _, r := range a.resolvers {
		if _, ok := r.(approvals.Locator); ok {
			return true
		}
	}
	return false
}

// viewOf is c as argview shows it: its arguments as forwarded, the tool's
// inputSchema when known, and every form of every path-like value.
func (a *asker) viewOf(c *call) argview.Call {
	v := argview.Call{Arguments: c.args, Paths: pathViews(c), PathKey: c.policy.IsPathKey}
	if a.schema != nil {
		v.Schema = a.schema(c.tool)
	}
	return v
}

// pathViews are c's path-like values with every form the rules decide
// them on, as argview shows them: each absolute reading, cleaned, and for
// a server on this machine where it leads on disk (as decide resolves it),
// the other forms (NFC), and whether a location is unknown.
func pathViews(c *call) []argview.Path {
	rc := c.rulesCall()
	if c.snap != nil && c.snap.servers[c.tool.Server].ResolveSymlinks || c.policy.IsLocal(c.tool.Server) {
		rc.Physical = PhysicalForms(c.policy, rc)
	}
	forms, _ := c.policy.PathForms(rc)
	out := make([]argview.Path, 0, len(forms))
	for _, f := range forms {
		p := argview.Path{Value: f.Value, Unknown: !f.Known}
		seen := map[string]bool{}
		for _, raw := range f.Raw {
			r := argview.Reading{Lexical: filepath.Clean(raw), OnDisk: rc.Physical[raw]}
			seen[r.Lexical], seen[r.OnDisk] = true, true
			p.Readings = append(p.Readings, r)
		}
		for _, form := range f.Forms {
			if !seen[form] {
				p.Also = append(p.Also, form)
			}
		}
		out = append(out, p)
	}
	return out
}

// inputSchema returns t's inputSchema as the upstream listed it, decoded
// from JSON, or nil when the tool is not listed now.
func (ts *toolset) inputSchema(t Tool) map[string]any {
	ts.mu.Lock()
	i := slices.IndexFunc(ts.byServer[t.Server], func(d mcp.Tool) bool { return d.Name == t.Name })
	var def mcp.Tool
	if i >= 0 {
		def = ts.byServer[t.Server][i]
	}
	ts.mu.Unlock()
	if i < 0 {
		return nil
	}
	raw := def.RawInputSchema
	if raw == nil {
		var err error
		if raw, err = json.Marshal(def.InputSchema); err != nil {
			return nil
		}
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}
