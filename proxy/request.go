package proxy

import (
	"context"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/telemetry"
	"github.com/mcpwarden/mcpwarden/proxy/naming"
)

// errRefused marks a request mcpwarden refused, as opposed to one the
// upstream failed.
var errRefused = errors.New("mcpwarden refused the request")

// newRequest builds the call of a request other than tools/call: a
// request of method to server, known to the client as exposed (a URI, a
// prompt's wire name). Its canonical name is mcp:<server>:<method>, which
// no tool name can be (tool names have no "/"), and its arguments are the
// request's params exactly as they are forwarded (docs/design.md, "Names": uri,
// name, arguments, ref, argument).
func (s *Server) newRequest(ctx context.Context, server string, method mcp.MCPMethod, exposed string, params map[string]any) *call {
	t := naming.Tool{Server: server, Name: string(method), Canonical: naming.Canonical(server, string(method)), Wire: exposed}
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
	ctx, leave, ok := s.drain.Enter(ctx)
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
	res, err := s.admit(ctx, c, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: c.tool.Wire, Arguments: c.args}}, ask)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %v", errRefused, err)
	case !res.Forward:
		return nil, fmt.Errorf("%w: %s", errRefused, res.Text)
	}
	return s.forwardRequest(ctx, c, do)
}
