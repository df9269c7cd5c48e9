package upstream

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// A Reach says which of an upstream's requests the client a request is
// made for can be sent while it is in flight: elicitation/create and
// sampling/createMessage need a client that declared the capability (a
// client of the handshake gets them as requests; a 2026-07-28 client in
// the result of its call, which the proxy relays: see WithInputRelay and
// docs/protocol.md). roots/list is always answered, by mcpwarden itself,
// so it is not part of a Reach.
//
// An upstream is declared a capability only as far as the Reach of whom it
// serves allows: a 2026-07-28 upstream, which is sent the client's
// capabilities with every request, is declared per request the Reach the
// request's context carries (WithReach); a child isolated per session, at
// its initialize, the Reach of the request that started it. A shared
// upstream session (and a child per principal) of the handshake serves
// clients that may differ, and is declared what some client could be
// reached with. The zero Reach reaches nothing.
type Reach struct {
	Elicitation bool
	Sampling    bool
}

type reachKey struct{}

// WithReach returns ctx carrying r, the Reach of the client a request on
// ctx is made for.
func WithReach(ctx context.Context, r Reach) context.Context {
	return context.WithValue(ctx, reachKey{}, r)
}

// reachOf is the Reach in ctx, and whether there is one.
func reachOf(ctx context.Context) (Reach, bool) {
	r, ok := ctx.Value(reachKey{}).(Reach)
	return r, ok
}

// narrowCapabilities takes out of the per-request client capabilities of
// req, a request of protocol 2026-07-28 (the only one that has them), the
// capabilities ctx's Reach lacks, so that the upstream is not told it may
// ask what cannot reach the client. mcp-go's client writes them from its
// handlers, for every request alike, just before it sends one; a request
// without a Reach, or of the handshake, is left as it is.
func narrowCapabilities(ctx context.Context, req *transport.JSONRPCRequest) {
	r, ok := reachOf(ctx)
	if !ok || (r.Elicitation && r.Sampling) {
		return
	}
	params, ok := req.Params.(map[string]json.RawMessage)
	if !ok || params["_meta"] == nil {
		return
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(params["_meta"], &meta) != nil || meta[mcp.MetaKeyClientCapabilities] == nil {
		return
	}
	var caps map[string]json.RawMessage
	if json.Unmarshal(meta[mcp.MetaKeyClientCapabilities], &caps) != nil {
		return
	}
	if !r.Elicitation {
		delete(caps, "elicitation")
	}
	if !r.Sampling {
		delete(caps, "sampling")
	}
	b, err := json.Marshal(caps)
	if err != nil {
		return
	}
	meta[mcp.MetaKeyClientCapabilities] = b
	if b, err = json.Marshal(meta); err != nil {
		return
	}
	narrowed := make(map[string]json.RawMessage, len(params))
	for k, v := range params {
		narrowed[k] = v
	}
	narrowed["_meta"] = b
	req.Params = narrowed
}

// reachOptions are the handlers of clientOptions that r keeps.
func reachOptions(h peerHandlers, r Reach, sampling bool) []client.ClientOption {
	opts := []client.ClientOption{client.WithRootsHandler(h)}
	if r.Elicitation {
		opts = append(opts, client.WithElicitationHandler(h))
	}
	if r.Sampling && sampling {
		opts = append(opts, client.WithSamplingHandler(h))
	}
	return opts
}
