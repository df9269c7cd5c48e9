package proxy

import (
	"context"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/upstream"
)

// reachOf is which of an upstream's requests a client that declared caps
// can be sent, whether as requests (a client of the handshake) or through
// its multi round-trip flow (a client of 2026-07-28: see inputRelay):
// those it declared. nil caps reach nothing.
func reachOf(caps *mcp.ClientCapabilities) upstream.Reach {
	if caps == nil {
		return upstream.Reach{}
	}
	return upstream.Reach{Elicitation: caps.Elicitation != nil, Sampling: caps.Sampling != nil}
}

// withCallerReach returns uctx, the context of a request forwarded
// upstream for a client that declared caps (modern: of 2026-07-28),
// carrying which of an upstream's requests that client can be sent
// (reachOf), so that an upstream is declared elicitation and sampling only
// when they can reach the caller. When a client of the handshake is not
// known (caps is nil), uctx is returned as it is, and the upstream is
// declared what some client could be reached with.
func withCallerReach(uctx context.Context, caps *mcp.ClientCapabilities, modern bool) context.Context {
	if caps == nil && !modern {
		return uctx
	}
	return upstream.WithReach(uctx, reachOf(caps))
}

// undeclared is why a client whose reach is r cannot be sent an
// upstream's request of method, nil when it can be.
func undeclared(r upstream.Reach, method mcp.MCPMethod) error {
	switch {
	case method == mcp.MethodElicitationCreate && !r.Elicitation:
		return errors.New("the client did not declare elicitation")
	case method == mcp.MethodSamplingCreateMessage && !r.Sampling:
		return errors.New("the client did not declare sampling")
	}
	return nil
}
