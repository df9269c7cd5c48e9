package proxy

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/proxy/ask"
	"github.com/mcpwarden/mcpwarden/rules"
)

// An asking says how a request whose verdict is ask may be put to the
// human.
type asking uint8

const (
	// askNever forwards only an allow: an ask is recorded and not
	// forwarded. It is for the fan-out mcpwarden does on a client's behalf
	// (logging/setLevel), which no one should be asked about once per
	// server.
	askNever asking = iota
	// askHuman resolves an ask with the human; a client that can answer
	// only by retrying a tool call (a multi round-trip input request)
	// cannot be asked, and the request is refused.
	askHuman
	// askWithRetry is askHuman for a tools/call, whose client may answer
	// by retrying it: admit then returns the pending input request.
	askWithRetry
)

// admit decides c — malformed arguments refused before any rule, else the
// rules with every path form (s.decide) and the pins — settles an ask as
// ask says, with req as the call the human is asked about, and records the
// decision: the decision span, the metric and the audit event, written
// before anything is forwarded. A pending resolution (askWithRetry) is
// returned unrecorded: the call is decided when the client retries. The
// error, when set, is why nothing may be forwarded although the decision
// was to: the audit log cannot be written and audit.required is true.
func (s *Server) admit(ctx context.Context, c *call, req mcp.CallToolRequest, mode asking) (ask.Resolution, error) {
	dctx, dspan := s.tel.StartDecision(ctx, c.tool.Server, c.tool.Name)
	var res ask.Resolution
	switch {
	case c.argsErr != nil:
		c.verdict = rules.Verdict{Decision: rules.Deny, Reason: c.argsErr.Error()}
		res = ask.Resolution{GrantedBy: audit.GrantedByRule, Reason: argsReason(c.argsErr), Text: fmt.Sprintf("mcpwarden refused %s: %v", c.tool.Canonical, c.argsErr)}
	default:
		c.verdict = s.review.verdict(c.tool, s.decide(dctx, c))
		if c.shadowed(s.tel) {
			res = ask.Resolution{Forward: true, GrantedBy: c.grantedBy, Reason: c.reason}
			break
		}
		switch c.verdict.Decision {
		case rules.Allow:
			res = ask.Resolution{Forward: true, GrantedBy: audit.GrantedByRule}
		case rules.Ask:
			if mode == askNever {
				res = ask.Resolution{GrantedBy: audit.GrantedByRule, Reason: "not asked: only an allow rule forwards " + string(c.method), Text: fmt.Sprintf("mcpwarden did not forward %s: it needs approval (%s), and it is never asked; allow it with a rule.", c.tool.Canonical, ruleName(c))}
				break
			}
			res = s.resolveAsk(dctx, c, req)
			switch {
			case res.Pending != nil && mode == askWithRetry:
				dspan.End(c.verdict, audit.GrantedByNone)
				return res, nil // asked; decided when the client retries
			case res.Pending != nil:
				res = retryOnly(c)
			}
		default:
			res = ask.Resolution{GrantedBy: audit.GrantedByRule, Reason: c.verdict.Reason, Text: denyText(c)}
		}
	}
	c.grantedBy, c.reason, c.failure = res.GrantedBy, res.Reason, res.Failure
	if c.verdict.Decision == rules.Ask {
		c.outcome = audit.OutcomeOf(res.Forward)
	}
	dspan.End(c.verdict, c.grantedBy)
	s.tel.Decision(c.profile, c.tool.Server, c.tool.Name, c.verdict.Decision)
	if err := s.writeAudit(ctx, c.decisionEvent()); err != nil && s.audit.Required() && res.Forward {
		return res, fmt.Errorf("%s: the audit log cannot be written (%v), and audit.required is true, so nothing was forwarded", c.tool.Canonical, err)
	}
	return res, nil
}

// retryOnly is the refusal of c, asked, when its client can answer only
// with a multi round-trip input request: that answer comes with a retried
// tools/call, and c is not one.
func retryOnly(c *call) ask.Resolution {
	return ask.Resolution{GrantedBy: audit.GrantedByNoElicitation, Reason: "the client answers asks only by retrying a tool call", Text: fmt.Sprintf("mcpwarden: %s needs approval (%s), and this client can only be asked during a tool call; nothing was forwarded.", c.tool.Canonical, ruleName(c))}
}
