package ask

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
	"github.com/mcpwarden/mcpwarden/internal/enumtext"
	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/textcut"
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

// The choices of the result form (the values of its decision field).
const (
	ResultChoiceAsSent   = "allow_once"
	ResultChoiceRedacted = "allow_redacted"
	ResultChoiceDeny     = "deny"
)

// A ResultOutcome is what becomes of a result held for a human. The zero
// value withholds it, so a forgotten assignment fails closed.
type ResultOutcome uint8

// The outcomes, with their names in the comments.
const (
	ResultWithheld ResultOutcome = iota // "withheld"
	ResultAsSent                        // "as_sent"
	ResultRedacted                      // "redacted"
)

var resultOutcomeNames = enumtext.Names[ResultOutcome]{ResultWithheld: "withheld", ResultAsSent: "as_sent", ResultRedacted: "redacted"}

// String returns the outcome's name.
func (o ResultOutcome) String() string { return resultOutcomeNames.String(o, "ResultOutcome") }

// MarshalText returns the outcome's name.
func (o ResultOutcome) MarshalText() ([]byte, error) {
	return resultOutcomeNames.Marshal(o, "result outcome")
}

// A ResultAnswer is how the ask about a result came out, for the client
// and the result's audit event.
type ResultAnswer struct {
	Outcome   ResultOutcome
	GrantedBy audit.GrantedBy
	Reason    string
	Failure   string
}

// AuditOutcome is the result event's outcome: allowed when the result
// was passed on, as sent or redacted; refused when it was withheld.
func (ans ResultAnswer) AuditOutcome() audit.Outcome {
	return audit.OutcomeOf(ans.Outcome != ResultWithheld)
}

// Detail is the result event's account of the scan and the answer: the
// kinds of credential found and what became of them, never the credentials.
func (ans ResultAnswer) Detail(r scan.Findings) string {
	done := "withheld"
	switch ans.Outcome {
	case ResultAsSent:
		done = "passed on as sent after an allow"
	case ResultRedacted:
		done = "redacted after an allow"
	}
	return fmt.Sprintf("result credentials: %s (%s, results: ask)", strings.Join(r.Names(), ", "), done)
}

// ResolveResult asks about a result through the client's form, then each
// resolver, until one answers; see the comment at the top of the file.
func (a *Asker) ResolveResult(ctx context.Context, q *Question, req mcp.CallToolRequest, findings scan.Findings, preview string) ResultAnswer {
	var whys, failures []string
	done := func(ans ResultAnswer) ResultAnswer {
		if ans.Failure != "" {
			failures = append(failures, ans.Failure)
		}
		ans.Reason = strings.Join(append(whys, ans.Reason), "; ")
		ans.Failure = strings.Join(failures, "; ")
		return ans
	}
	args := q.Args
	caps, modern := ClientCapabilities(ctx)
	switch {
	case a.NoElicit:
		whys = append(whys, "asking through MCP elicitation is off (ask.elicitation: false)")
	case caps == nil || caps.Elicitation == nil:
		whys = append(whys, "the client cannot be asked (no elicitation capability)")
	case modern:
		whys = append(whys, "a result cannot be put to a client that answers by retrying the call")
	default:
		ans, none := a.elicitResult(ctx, q, findings, args, preview)
		if none == nil {
			return done(ans)
		}
		whys = append(whys, none.why)
		if none.failure != "" {
			failures = append(failures, none.failure)
		}
	}
	for _, r := range a.Resolvers {
		ans, none := a.resultOutOfBand(ctx, q, req, r, findings, args)
		if none == nil {
			return done(ans)
		}
		whys = append(whys, none.why)
		if none.failure != "" {
			failures = append(failures, none.failure)
		}
	}
	return done(ResultAnswer{GrantedBy: audit.GrantedByNoElicitation, Reason: "no one answered; a result is never passed on by ask_fallback"})
}

// resultRule is the rule an ask about a result names, with what it found.
func resultRule(findings scan.Findings) string {
	return "results: ask (the result holds " + strings.Join(findings.Names(), ", ") + ")"
}

// ResultForm is the elicitation form of an ask about a result.
func (a *Asker) ResultForm(q *Question, findings scan.Findings, args map[string]any, preview string) mcp.ElicitationParams {
	var b strings.Builder
	fmt.Fprintf(&b, "%s let the client see this result?\n\nTool: %s\nServer: %s\n", FormTitle, argview.Escape(q.Tool), argview.Escape(q.Server))
	client := "(unnamed)"
	if q.Client != nil {
		client = strings.TrimSpace(q.Client.Name + " " + q.Client.Version)
	}
	fmt.Fprintf(&b, "Client: %s\nPrincipal: %s\nAsked by: %s\n", argview.Escape(client), argview.Escape(q.Principal), resultRule(findings))
	b.WriteString("\nThe result holds credentials, not shown here. The call's arguments:\n")
	for _, l := range argview.Render(argview.Call{Arguments: args, PathKey: q.IsPathKey}, MaxValueShown).Lines[1:] {
		b.WriteString(l)
		b.WriteString("\n")
	}
	head, hidden := textcut.Head(preview, MaxValueShown)
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
	return DecisionForm(b.String(), "What the client gets of the result of "+q.Tool,
		[]string{ResultChoiceAsSent, ResultChoiceRedacted, ResultChoiceDeny},
		[]string{"Pass the result on as sent, credentials included", "Pass the result on with the credentials masked", "Withhold the result"})
}

// elicitResult asks a legacy client about a result with its form. none is
// set when the client gave no answer.
func (a *Asker) elicitResult(ctx context.Context, q *Question, findings scan.Findings, args map[string]any, preview string) (ans ResultAnswer, none *noAnswer) {
	ectx, cancel := context.WithTimeout(ctx, a.Timeout)
	defer cancel()
	res, err := a.MCP.RequestElicitation(ectx, mcp.ElicitationRequest{
		Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)},
		Params:  a.ResultForm(q, findings, args, preview),
	})
	switch {
	case err != nil && ctx.Err() != nil:
		return ResultAnswer{GrantedBy: audit.GrantedByUserDenied, Reason: "cancelled by the client while the result waited for approval"}, nil
	case err != nil && errors.Is(ectx.Err(), context.DeadlineExceeded):
		return ResultAnswer{GrantedBy: audit.GrantedByTimeout, Reason: "no answer within ask.timeout"}, nil
	case err != nil:
		return ResultAnswer{}, &noAnswer{why: "asking the client failed", failure: fmt.Sprintf("elicitation: %v", err)}
	}
	outcome, why, ok := resultChoiceOf(res)
	if !ok {
		return ResultAnswer{}, &noAnswer{why: why}
	}
	switch outcome {
	case ResultAsSent:
		return ResultAnswer{Outcome: outcome, GrantedBy: audit.GrantedByUserOnce, Reason: "passed on as sent on the client's form"}, nil
	case ResultRedacted:
		return ResultAnswer{Outcome: outcome, GrantedBy: audit.GrantedByUserOnce, Reason: "passed on with the credentials masked on the client's form"}, nil
	}
	return ResultAnswer{GrantedBy: audit.GrantedByUserDenied, Reason: "withheld on the client's form"}, nil
}

// resultChoiceOf reads the result form's answer: only an accept with an
// offered choice decides, and a decline withholds; anything else is no
// answer (ok false), with why saying which.
func resultChoiceOf(res *mcp.ElicitationResult) (outcome ResultOutcome, why string, ok bool) {
	switch {
	case res == nil:
		return ResultWithheld, "the client returned no answer", false
	case res.Action == mcp.ElicitationResponseActionDecline:
		return ResultWithheld, "", true
	case res.Action != mcp.ElicitationResponseActionAccept:
		return ResultWithheld, fmt.Sprintf("the client answered the form with action %q", res.Action), false
	}
	content, _ := res.Content.(map[string]any)
	switch s, _ := content["decision"].(string); s {
	case ResultChoiceAsSent:
		return ResultAsSent, "", true
	case ResultChoiceRedacted:
		return ResultRedacted, "", true
	case ResultChoiceDeny:
		return ResultWithheld, "", true
	case "":
		return ResultWithheld, "the client accepted the form without a choice", false
	default:
		return ResultWithheld, fmt.Sprintf("the client answered %q, which is not a choice of the form", textcut.Tail(s, 40)), false
	}
}

// resultOutOfBand asks resolver r about a result. An allow of any kind
// passes the result on as sent (the page offers no masking) and earns no
// grant; none is set when r gave no answer.
func (a *Asker) resultOutOfBand(ctx context.Context, q *Question, req mcp.CallToolRequest, r approvals.Resolver, findings scan.Findings, args map[string]any) (ans ResultAnswer, none *noAnswer) {
	areq := approvals.Request{
		ID:        approvals.NewID(),
		Tool:      argview.Escape(q.Tool),
		Server:    argview.Escape(q.Server),
		Session:   q.Session,
		Principal: argview.Escape(q.Principal),
		Rule:      resultRule(findings) + "; an allow passes the result on as sent, credentials included",
		Gate:      resultGate,
		Arguments: argview.Hide(args, q.IsPathKey),
		Lines:     argview.Render(argview.Call{Arguments: args, PathKey: q.IsPathKey}, 0).Lines,
		AskedAt:   time.Now(),
	}
	if q.Client != nil {
		areq.Client = argview.Escape(strings.TrimSpace(q.Client.Name + " " + q.Client.Version))
	}
	where := "by the external resolver"
	if l, ok := r.(approvals.Locator); ok {
		where = l.Where(areq.ID)
	}
	rctx, cancel := context.WithTimeout(ctx, a.Timeout)
	defer cancel()
	defer a.progress(ctx, req, fmt.Sprintf("mcpwarden: the result of %s is waiting for approval %s", q.Tool, where))()
	d, err := r.Resolve(rctx, areq)
	by := grantedByVia(d.Via)
	switch {
	case ctx.Err() != nil:
		return ResultAnswer{GrantedBy: by, Reason: "cancelled by the client while the result waited for approval"}, nil
	case err != nil && errors.Is(rctx.Err(), context.DeadlineExceeded):
		return ResultAnswer{GrantedBy: audit.GrantedByTimeout, Reason: "no answer within ask.timeout (approvals are made " + where + ")"}, nil
	case err != nil:
		return ResultAnswer{}, &noAnswer{why: resolverName(d.Via) + " gave no answer", failure: err.Error()}
	}
	who := ""
	if d.Who != "" {
		who = " by " + d.Who
	}
	if d.Answer == state.Deny {
		return ResultAnswer{GrantedBy: by, Reason: "withheld " + viaText(d.Via) + who}, nil
	}
	return ResultAnswer{Outcome: ResultAsSent, GrantedBy: by, Reason: "passed on as sent " + viaText(d.Via) + who}, nil
}

// Refusal is the error text the client gets for a result withheld after
// the ask.
func (ans ResultAnswer) Refusal(canonical string, findings scan.Findings) string {
	return fmt.Sprintf("mcpwarden withheld the result of %s: it held credentials (%s) and the policy says results: ask; %s.",
		canonical, strings.Join(findings.Names(), ", "), ans.Reason)
}

// ReplyText is the text of a resources/read or prompts/get result for the
// human: a resource's text contents, one after another, and a line for
// each blob; a prompt's JSON.
func ReplyText(res any) string {
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
