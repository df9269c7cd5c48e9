package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/approvals"
	"github.com/mcpwarden/mcpwarden/internal/argview"
	"github.com/mcpwarden/mcpwarden/internal/jsonargs"
	"github.com/mcpwarden/mcpwarden/internal/secrets"
	"github.com/mcpwarden/mcpwarden/internal/textcut"
	"github.com/mcpwarden/mcpwarden/proxy/ask"
	"github.com/mcpwarden/mcpwarden/proxy/scan"
)

// Asking about a result (`results: ask`, docs/design.md, "Deciding a
// request"): a result that holds credentials is held while a human is
// asked whether the client may see it, through the ask machinery's
// channels — the client's elicitation form (a legacy client; a 2026-07-28
// client answers by retrying the call, which cannot carry a result held
// here), then each out-of-band resolver (the approvals page, an external
// resolver). The human sees the call that produced the result, the kinds
// of credential it holds and the result with them masked, never the
// credentials. The answer settles this one result only: it earns no
// session grant, and a standing grant does not settle it. No answer, a
// timeout or a cancelled call withholds the result whatever ask_fallback
// says, since letting it through would hand the credentials over because
// no one looked.

// resultGate is the Gate an approval request about a result names.
const resultGate = "results"

// The choices of the result form.
const (
	resultChoiceAsSent   = "allow_once"
	resultChoiceRedacted = "allow_redacted"
	resultChoiceDeny     = "deny"
)

// A resultOutcome is what becomes of a result held for a human. The zero
// value withholds it, so a forgotten assignment fails closed.
type resultOutcome uint8

const (
	resultWithheld resultOutcome = iota
	resultAsSent
	resultRedacted
)

// A resultAnswer is how the ask about a result came out, for the client
// and the result's audit event.
type resultAnswer struct {
	outcome   resultOutcome
	grantedBy audit.GrantedBy
	reason    string
	failure   string
}

// auditOutcome is the result event's outcome: allowed when the result
// was passed on, as sent or redacted; refused when it was withheld.
func (ans resultAnswer) auditOutcome() audit.Outcome {
	return audit.OutcomeOf(ans.outcome != resultWithheld)
}

// detail is the result event's account of the scan and the answer: the
// kinds of credential found and what became of them, never the credentials.
func (ans resultAnswer) detail(r scan.Findings) string {
	done := "withheld"
	switch ans.outcome {
	case resultAsSent:
		done = "passed on as sent after an allow"
	case resultRedacted:
		done = "redacted after an allow"
	}
	return fmt.Sprintf("result credentials: %s (%s, results: ask)", strings.Join(r.Names(), ", "), done)
}

// askAboutResult holds a result of c that holds the credentials scan found
// while a human is asked about it; preview is the result's text for the
// human (masked here). It is counted as a pending ask while it runs.
func (s *Server) askAboutResult(ctx context.Context, c *call, req mcp.CallToolRequest, findings scan.Findings, preview string) resultAnswer {
	s.tel.AskStarted()
	defer s.tel.AskEnded()
	return s.asker.resolveResult(ctx, c, req, findings, secrets.Redact(preview, scan.Mask))
}

// resolveResult asks about a result through the client's form, then each
// resolver, until one answers; see the comment at the top of the file.
func (a *asker) resolveResult(ctx context.Context, c *call, req mcp.CallToolRequest, findings scan.Findings, preview string) resultAnswer {
	var whys, failures []string
	done := func(ans resultAnswer) resultAnswer {
		if ans.failure != "" {
			failures = append(failures, ans.failure)
		}
		ans.reason = strings.Join(append(whys, ans.reason), "; ")
		ans.failure = strings.Join(failures, "; ")
		return ans
	}
	args := a.resultArgs(c)
	caps, modern := clientCapabilities(ctx)
	switch {
	case a.noElicit:
		whys = append(whys, "asking through MCP elicitation is off (ask.elicitation: false)")
	case caps == nil || caps.Elicitation == nil:
		whys = append(whys, "the client cannot be asked (no elicitation capability)")
	case modern:
		whys = append(whys, "a result cannot be put to a client that answers by retrying the call")
	default:
		ans, none := a.elicitResult(ctx, c, findings, args, preview)
		if none == nil {
			return done(ans)
		}
		whys = append(whys, none.why)
		if none.failure != "" {
			failures = append(failures, none.failure)
		}
	}
	for _, r := range a.resolvers {
		ans, none := a.resultOutOfBand(ctx, c, req, r, findings, args)
		if none == nil {
			return done(ans)
		}
		whys = append(whys, none.why)
		if none.failure != "" {
			failures = append(failures, none.failure)
		}
	}
	return done(resultAnswer{grantedBy: audit.GrantedByNoElicitation, reason: "no one answered; a result is never passed on by ask_fallback"})
}

// resultArgs are c's arguments as forwarded, for the human (argview hides
// the credentials in them). A forwarded tool call keeps only its canonical
// arguments, which are read again.
func (a *asker) resultArgs(c *call) map[string]any {
	args := c.args
	if args == nil && len(c.canonical) > 0 {
		args, _, _ = jsonargs.Parse(c.canonical)
	}
	return args
}

// resultRule is the rule an ask about a result names, with what it found.
func resultRule(findings scan.Findings) string {
	return "results: ask (the result holds " + strings.Join(findings.Names(), ", ") + ")"
}

// resultForm is the elicitation form of an ask about a result.
func (a *asker) resultForm(c *call, findings scan.Findings, args map[string]any, preview string) mcp.ElicitationParams {
	var b strings.Builder
	fmt.Fprintf(&b, "%s let the client see this result?\n\nTool: %s\nServer: %s\n", formTitle, argview.Escape(c.tool.Canonical), argview.Escape(c.tool.Server))
	client := "(unnamed)"
	if c.client != nil {
		client = strings.TrimSpace(c.client.Name + " " + c.client.Version)
	}
	fmt.Fprintf(&b, "Client: %s\nPrincipal: %s\nAsked by: %s\n", argview.Escape(client), argview.Escape(c.principal), resultRule(findings))
	b.WriteString("\nThe result holds credentials, not shown here. The call's arguments:\n")
	for _, l := range argview.Render(argview.Call{Arguments: args, PathKey: c.policy.IsPathKey}, maxValueShown).Lines[1:] {
		b.WriteString(l)
		b.WriteString("\n")
	}
	head, hidden := textcut.Head(preview, maxValueShown)
	// The result keeps its lines (it is read as text), each with its
	// control, bidirectional and invisible characters escaped: none can
	// overwrite (`\r`), reorder or hide what the human reads.
	lines := strings.Split(head, "\n")
	for i, l := range lines {
		lines[i] = argview.Visible(l)
	}
	fmt.Fprintf(&b, "\nThe result, credentials masked:\n%s\n", strings.Join(lines, "\n"))
	if hidden > 0 {
		fmt.Fprintf(&b, "… (%d more characters hidden)\n", hidden)
	}
	return ask.DecisionForm(b.String(), "What the client gets of the result of "+c.tool.Canonical,
		[]string{resultChoiceAsSent, resultChoiceRedacted, resultChoiceDeny},
		[]string{"Pass the result on as sent, credentials included", "Pass the result on with the credentials masked", "Withhold the result"})
}

// elicitResult asks a legacy client about a result with its form. none is
// set when the client gave no answer.
func (a *asker) elicitResult(ctx context.Context, c *call, findings scan.Findings, args map[string]any, preview string) (ans resultAnswer, none *noAnswer) {
	ectx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	res, err := a.mcp.RequestElicitation(ectx, mcp.ElicitationRequest{
		Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)},
		Params:  a.resultForm(c, findings, args, preview),
	})
	switch {
	case err != nil && ctx.Err() != nil:
		return resultAnswer{grantedBy: audit.GrantedByUserDenied, reason: "cancelled by the client while the result waited for approval"}, nil
	case err != nil && errors.Is(ectx.Err(), context.DeadlineExceeded):
		return resultAnswer{grantedBy: audit.GrantedByTimeout, reason: "no answer within ask.timeout"}, nil
	case err != nil:
		return resultAnswer{}, &noAnswer{why: "asking the client failed", failure: fmt.Sprintf("elicitation: %v", err)}
	}
	outcome, why, ok := resultChoiceOf(res)
	if !ok {
		return resultAnswer{}, &noAnswer{why: why}
	}
	switch outcome {
	case resultAsSent:
		return resultAnswer{outcome: outcome, grantedBy: audit.GrantedByUserOnce, reason: "passed on as sent on the client's form"}, nil
	case resultRedacted:
		return resultAnswer{outcome: outcome, grantedBy: audit.GrantedByUserOnce, reason: "passed on with the credentials masked on the client's form"}, nil
	}
	return resultAnswer{grantedBy: audit.GrantedByUserDenied, reason: "withheld on the client's form"}, nil
}

// resultChoiceOf reads the result form's answer: only an accept with an
// offered choice decides, and a decline withholds; anything else is no
// answer (ok false), with why saying which.
func resultChoiceOf(res *mcp.ElicitationResult) (outcome resultOutcome, why string, ok bool) {
	switch {
	case res == nil:
		return resultWithheld, "the client returned no answer", false
	case res.Action == mcp.ElicitationResponseActionDecline:
		return resultWithheld, "", true
	case res.Action != mcp.ElicitationResponseActionAccept:
		return resultWithheld, fmt.Sprintf("the client answered the form with action %q", res.Action), false
	}
	content, _ := res.Content.(map[string]any)
	switch s, _ := content["decision"].(string); s {
	case resultChoiceAsSent:
		return resultAsSent, "", true
	case resultChoiceRedacted:
		return resultRedacted, "", true
	case resultChoiceDeny:
		return resultWithheld, "", true
	case "":
		return resultWithheld, "the client accepted the form without a choice", false
	default:
		return resultWithheld, fmt.Sprintf("the client answered %q, which is not a choice of the form", textcut.Tail(s, 40)), false
	}
}

// resultOutOfBand asks resolver r about a result. An allow of any kind
// passes the result on as sent (the page offers no masking) and earns no
// grant; none is set when r gave no answer.
func (a *asker) resultOutOfBand(ctx context.Context, c *call, req mcp.CallToolRequest, r approvals.Resolver, findings scan.Findings, args map[string]any) (ans resultAnswer, none *noAnswer) {
	areq := approvals.Request{
		ID:        approvals.NewID(),
		Tool:      argview.Escape(c.tool.Canonical),
		Server:    argview.Escape(c.tool.Server),
		Session:   c.session,
		Principal: argview.Escape(c.principal),
		Rule:      resultRule(findings) + "; an allow passes the result on as sent, credentials included",
		Gate:      resultGate,
		Arguments: argview.Hide(args, c.policy.IsPathKey),
		Lines:     argview.Render(argview.Call{Arguments: args, PathKey: c.policy.IsPathKey}, 0).Lines,
		AskedAt:   time.Now(),
	}
	if c.client != nil {
		areq.Client = argview.Escape(strings.TrimSpace(c.client.Name + " " + c.client.Version))
	}
	where := "by the external resolver"
	if l, ok := r.(approvals.Locator); ok {
		where = l.Where(areq.ID)
	}
	rctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	defer a.progress(ctx, req, fmt.Sprintf("mcpwarden: the result of %s is waiting for approval %s", c.tool.Canonical, where))()
	d, err := r.Resolve(rctx, areq)
	by := grantedByVia(d.Via)
	switch {
	case ctx.Err() != nil:
		return resultAnswer{grantedBy: by, reason: "cancelled by the client while the result waited for approval"}, nil
	case err != nil && errors.Is(rctx.Err(), context.DeadlineExceeded):
		return resultAnswer{grantedBy: audit.GrantedByTimeout, reason: "no answer within ask.timeout (approvals are made " + where + ")"}, nil
	case err != nil:
		return resultAnswer{}, &noAnswer{why: resolverName(d.Via) + " gave no answer", failure: err.Error()}
	}
	who := ""
	if d.Who != "" {
		who = " by " + d.Who
	}
	if d.Answer == approvals.Deny {
		return resultAnswer{grantedBy: by, reason: "withheld " + viaText(d.Via) + who}, nil
	}
	return resultAnswer{outcome: resultAsSent, grantedBy: by, reason: "passed on as sent " + viaText(d.Via) + who}, nil
}

// refusal is the error text the client gets for a result withheld after
// the ask.
func (ans resultAnswer) refusal(canonical string, findings scan.Findings) string {
	return fmt.Sprintf("mcpwarden withheld the result of %s: it held credentials (%s) and the policy says results: ask; %s.",
		canonical, strings.Join(findings.Names(), ", "), ans.reason)
}

// replyText is the text of a resources/read or prompts/get result for the
// human: a resource's text contents, one after another, and a line for
// each blob; a prompt's JSON.
func replyText(res any) string {
	r, ok := res.(*mcp.ReadResourceResult)
	if !ok {
		if p, ok := res.(*mcp.GetPromptResult); ok {
			res, _, _ = scan.Prompt(p, true) // the human sees no blob that holds a credential
		}
		raw, _ := json.Marshal(res)
		return string(raw)
	}
	var b strings.Builder
	for _, content := range r.Contents {
		switch c := content.(type) {
		case mcp.TextResourceContents:
			b.WriteString(c.Text)
			b.WriteByte('\n')
		case mcp.BlobResourceContents:
			fmt.Fprintf(&b, "(%s: binary contents, %d characters of base64)\n", c.URI, len(c.Blob))
		}
	}
	return b.String()
}
