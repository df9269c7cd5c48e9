package proxy

import (
	"context"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/telemetry"
	"github.com/mcpwarden/mcpwarden/rules"
)

// An asking says whether a request whose verdict is ask may be put to the
// human.
type asking bool

const (
	// askHuman resolves an ask as a tools/call does.
	askHuman asking = true
	// askNever forwards only an allow: an ask is recorded and not
	// forwarded. It is for the fan-out mcpwarden does on a client's behalf
	// (logging/setLevel), which no one should be asked about once per
	// server.
	askNever asking = false
)

// errRefused marks a request mcpwarden refused, as opposed to one the
// upstream failed.
var errRefused = errors.New("mcpwarden refused the request")

// newRequest builds the call of a request other than tools/call: a
// request of method to server, known to the client as exposed (a URI, a
// prompt's wire name). Its canonical name is mcp:<server>:<method>, which
// no tool name can be (tool names have no "/"), and its arguments are the
// request's params exactly as they are forwarded (DESIGN.md §1: uri,
// name, arguments, ref, argument).
func (s *Server) newRequest(ctx context.Context, server string, method mcp.MCPMethod, exposed string, params map[string]any) *call {
	t := Tool{Server: server, Name: string(method), Canonical: Canonical(server, string(method)), Wire: exposed}
	c := s.newCall(ctx, t, mcp.CallToolRequest{Params: mcp.CallToolParams{Arguments: params}})
	c.method = method
	return c
}

// request decides c, a request other than tools/call, by the same code as
// a tools/call — the rules with symlinks followed (s.decide), the pins,
// the profile's gate, the ask (s.resolveAsk) — writes the decision event
// before anything is forwarded, and, when it is allowed, hands the
// upstream session to do and writes the result event. A refusal is an
// error wrapping errRefused and naming the rule; nothing reaches the
// upstream.
func (s *Server) request(ctx context.Context, c *call, ask asking, do func(context.Context, *client.Client, mcp.ServerCapabilities) (any, error)) (any, error) {
	ctx, leave, ok := s.drain.enter(ctx)
	if !ok {
		return nil, fmt.Errorf("%w: %w; %s was not forwarded", errRefused, ErrShuttingDown, c.tool.Canonical)
	}
	defer leave()
	ctx, span := s.tel.StartRequest(ctx, telemetry.Request{Method: string(c.method), Tool: c.tool.Wire, Session: c.session})
	res, err := s.admitAndForward(ctx, c, ask, do)
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, ErrShuttingDown) {
		err = fmt.Errorf("%w (%s; an upstream already working on it was sent notifications/cancelled)", cause, c.tool.Canonical)
	}
	span.End(err)
	return res, err
}

func (s *Server) admitAndForward(ctx context.Context, c *call, ask asking, do func(context.Context, *client.Client, mcp.ServerCapabilities) (any, error)) (any, error) {
	dctx, dspan := s.tel.StartDecision(ctx, c.tool.Server, c.tool.Name)
	var res resolution
	switch {
	case c.argsErr != nil:
		c.verdict = rules.Verdict{Decision: rules.Deny, Reason: c.argsErr.Error()}
		res = resolution{grantedBy: audit.GrantedByRule, text: fmt.Sprintf("mcpwarden refused %s: %v", c.tool.Canonical, c.argsErr)}
	default:
		c.verdict = s.pinVerdict(c.tool, s.decide(c))
		switch c.verdict.Decision {
		case rules.Allow:
			res = resolution{forward: true, grantedBy: audit.GrantedByRule}
		case rules.Ask:
			if ask == askNever {
				res = resolution{grantedBy: audit.GrantedByRule, reason: "not asked: only an allow rule forwards " + string(c.method), text: fmt.Sprintf("mcpwarden did not forward %s: it needs approval (%s), and it is never asked; allow it with a rule.", c.tool.Canonical, ruleName(c))}
				break
			}
			res = s.resolveAsk(dctx, c, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: c.tool.Wire, Arguments: c.args}})
			if res.pending != nil {
				// A multi round-trip answer comes with a retried tools/call;
				// other requests cannot carry it.
				res = resolution{grantedBy: audit.GrantedByNoElicitation, reason: "the client answers asks only by retrying a tool call", text: fmt.Sprintf("mcpwarden: %s needs approval (%s), and this client can only be asked during a tool call; nothing was forwarded.", c.tool.Canonical, ruleName(c))}
			}
		default:
			res = resolution{grantedBy: audit.GrantedByRule, reason: c.verdict.Reason, text: denyText(c)}
		}
	}
	c.grantedBy, c.reason, c.failure = res.grantedBy, res.reason, res.failure
	dspan.End(c.verdict, c.grantedBy)
	s.tel.Decision(c.profile, c.tool.Server, c.tool.Name, c.verdict.Decision)
	if err := s.writeAudit(ctx, c.decisionEvent()); err != nil && s.audit.Required() {
		return nil, fmt.Errorf("%w: %s: the audit log cannot be written (%v), and audit.required is true, so nothing was forwarded", errRefused, c.tool.Canonical, err)
	}
	if !res.forward {
		return nil, fmt.Errorf("%w: %s", errRefused, res.text)
	}
	return s.forwardRequest(ctx, c, do)
}
