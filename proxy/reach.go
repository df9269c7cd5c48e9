package proxy

import (
	"context"

	"github.com/mcpwarden/mcpwarden/proxy/ask"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// withCallerReach returns uctx, the context of a request forwarded
// upstream for the client request in ctx, carrying which of an upstream's
// requests that client can be sent (upstream.Reach), so that an upstream
// is declared elicitation and sampling only when they can reach the
// caller: those the client declared, whether it is sent them as requests
// (a client of the handshake) or relayed through its multi round-trip
// flow (a client of 2026-07-28: see inputRelay). When the client of the
// handshake is not known, uctx is returned as it is, and the upstream is declared what
// some client could be reached with.
func withCallerReach(ctx, uctx context.Context) context.Context {
	caps, modern := ask.ClientCapabilities(ctx)
	switch {
	case caps == nil && modern: // it declared none
		return upstream.WithReach(uctx, upstream.Reach{})
	case caps == nil:
		return uctx
	}
	return upstream.WithReach(uctx, upstream.Reach{Elicitation: caps.Elicitation != nil, Sampling: caps.Sampling != nil})
}
