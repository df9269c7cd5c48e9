package upstream

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// An upstream of protocol 2026-07-28 asks for input during a call by
// answering it with a multi round-trip result (resultType
// "input_required"). mcp-go's client fulfils such a result with the
// session's handlers and retries the call by itself, which is how the
// upstream's requests reach a client of the handshake (Peer). A client of
// 2026-07-28 can only be asked by returning such a result to it, so for
// its calls the proxy relays the round trip instead: WithInputRelay makes
// Pool.Call return the upstream's multi round-trip result as its raw
// result, and WithInputAnswers sends the call again with the client's
// answers and the upstream's request state.

type inputRelayKey struct{}

// WithInputRelay returns ctx for a tools/call whose multi round-trip
// result, if the upstream returns one, is Pool.Call's result (see
// AsksForInput) rather than fulfilled and retried by the upstream
// session.
func WithInputRelay(ctx context.Context) context.Context {
	return context.WithValue(ctx, inputRelayKey{}, true)
}

func relaysInput(ctx context.Context) bool {
	on, _ := ctx.Value(inputRelayKey{}).(bool)
	return on
}

// InputAnswers are what a retried tools/call carries to a 2026-07-28
// upstream: the request state of its multi round-trip result, verbatim,
// and the answers to its input requests, keyed by the upstream's ids.
type InputAnswers struct {
	RequestState string
	Responses    map[string]json.RawMessage
}

type inputAnswersKey struct{}

// WithInputAnswers returns ctx for a tools/call that answers the
// upstream's multi round-trip result with a.
func WithInputAnswers(ctx context.Context, a InputAnswers) context.Context {
	return context.WithValue(ctx, inputAnswersKey{}, a)
}

// AsksForInput reports whether raw, a tools/call result, is a multi
// round-trip result: the upstream asks for input before it answers.
func AsksForInput(raw json.RawMessage) bool { return asksForInput(raw) }

// addInputAnswers puts the InputAnswers of ctx into req, a tools/call of
// protocol 2026-07-28 (whose params mcp-go's client has already encoded
// member by member, as it adds the request's _meta): mcp-go's client
// sends the first attempt of a call without them. Any other request is
// left as it is.
func addInputAnswers(ctx context.Context, req *transport.JSONRPCRequest) {
	a, ok := ctx.Value(inputAnswersKey{}).(InputAnswers)
	if !ok || req.Method != string(mcp.MethodToolsCall) {
		return
	}
	params, ok := req.Params.(map[string]json.RawMessage)
	if !ok {
		return
	}
	out := make(map[string]json.RawMessage, len(params)+2)
	for k, v := range params {
		out[k] = v
	}
	if a.RequestState != "" {
		out["requestState"], _ = json.Marshal(a.RequestState)
	}
	if len(a.Responses) > 0 {
		b, err := json.Marshal(a.Responses)
		if err != nil {
			return
		}
		out["inputResponses"] = b
	}
	req.Params = out
}
