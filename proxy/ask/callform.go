package ask

import (
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/approvals"
	"github.com/mcpwarden/mcpwarden/internal/argview"
	"github.com/mcpwarden/mcpwarden/rules"
)

// FormTitle starts every approval form mcpwarden sends, so that an
// upstream's own elicitation (always prefixed "[<server>] ") cannot pass
// for one.
const FormTitle = "mcpwarden approval:"

// MaxValueShown bounds one key's or value's text on the form.
const MaxValueShown = 2000

// Form is the approval form for q (about t): what will run — the canonical tool,
// server, client, principal, the rule that asked, and every argument as
// it will be forwarded, laid out by argview (one line per argument, keys
// and values quoted and escaped, every form of each path on the lines
// under it, undeclared keys under a warning), in full up to MaxValueShown
// characters per key and value. offered are the choices the form offers:
// a session grant only where docs/design.md, "Asking a human", allows one.
//
// A form that had to cut something offers only the denials. The ask is
// not on the approvals page while the form is up, and a second form page
// would be a second elicitation the client may not show in order; so the
// human who wants to approve it cancels the form, which is no answer and
// passes the ask on to the approvals page when that is on (it shows the
// whole call), and the form says so, or how to turn the page on.
func (a *Asker) Form(q *Question, t Target) (params mcp.ElicitationParams, offered []string) {
	var b strings.Builder
	if t.Endpoint != "" {
		fmt.Fprintf(&b, "%s %s. Allow it?\n\nRequest: %s\nServer: %s\n", FormTitle, q.Summary, argview.Escape(q.Tool), argview.Escape(q.Server))
	} else {
		fmt.Fprintf(&b, "%s allow this call?\n\nTool: %s\nServer: %s\n", FormTitle, argview.Escape(q.Tool), argview.Escape(q.Server))
	}
	client := "(unnamed)"
	if q.Client != nil {
		client = strings.TrimSpace(q.Client.Name + " " + q.Client.Version)
	}
	fmt.Fprintf(&b, "Client: %s\nPrincipal: %s\nAsked by: %s in %s\n", argview.Escape(client), argview.Escape(q.Principal), argview.Escape(q.ruleName()), argview.Escape(q.Verdict.Gate))
	if q.Verdict.Gate == rules.GateFlow {
		// The human is told what the session saw that makes this call
		// risky: the call whose result armed the flow rule.
		fmt.Fprintf(&b, "Because: %s\n", argview.Escape(q.Verdict.Reason))
	}
	view := argview.Render(q.View(), MaxValueShown)
	b.WriteString("\n")
	for _, l := range view.Lines {
		b.WriteString(l)
		b.WriteString("\n")
	}

	canonical := argview.Escape(q.Tool)
	if view.Cut > 0 {
		fmt.Fprintf(&b, "\n%d characters are not shown on this form, so it cannot approve this call. ", view.Cut)
		if a.pageOn() {
			b.WriteString("To approve it, cancel this form to see the whole call on the approvals page and answer there.\n")
		} else {
			b.WriteString("To approve calls this long, turn on the approvals page (ask.approvals: local), which shows them whole.\n")
		}
		offered = []string{"deny", "deny_session"}
		return DecisionForm(b.String(), "Deny "+canonical, offered, []string{"Deny", "Deny " + canonical + " for this session"}), offered
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
	return DecisionForm(b.String(), "Allow or deny "+canonical, offered, names), offered
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
func (a *Asker) pageOn() bool {
	for _, r := range a.Resolvers {
		if _, ok := r.(approvals.Locator); ok {
			return true
		}
	}
	return false
}
