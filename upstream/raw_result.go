package upstream

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// A tools/call result is forwarded as the bytes the upstream sent: mcp-go's
// client would decode it into Go values (every content item unmarshalled,
// re-marshalled and unmarshalled again) only for the proxy to encode it
// once more, which for a 1 MiB result costs tens of milliseconds. The
// transports below keep mcp-go's client for everything else — request
// ids, cancellation, errors, server-to-client requests — and take the raw
// result out of a tools/call response on the way to it, when Pool.Call
// asked for it through the request's context.

// rawResultKey is the context key of the *json.RawMessage a tools/call
// result is put in.
type rawResultKey struct{}

// withRawResult returns a context whose tools/call result is put in *dst
// instead of being decoded by the client.
func withRawResult(ctx context.Context, dst *json.RawMessage) context.Context {
	return context.WithValue(ctx, rawResultKey{}, dst)
}

// emptyCallResult is what the client decodes in place of a result that
// was taken raw: it costs nothing to decode, and nothing reads it.
var emptyCallResult = json.RawMessage(`{"content":[]}`)

// takeRawResult moves the result of a successful tools/call response into
// the destination in ctx, if there is one.
func takeRawResult(ctx context.Context, req transport.JSONRPCRequest, resp *transport.JSONRPCResponse) {
	if resp == nil || resp.Error != nil || req.Method != string(mcp.MethodToolsCall) {
		return
	}
	dst, ok := ctx.Value(rawResultKey{}).(*json.RawMessage)
	if !ok || dst == nil {
		return
	}
	*dst, resp.Result = resp.Result, emptyCallResult
}

// The wrappers embed mcp-go's concrete transports, so every optional
// interface the client looks for (server-to-client requests, lost
// connections, HTTP protocol headers) is still there; only SendRequest is
// replaced.

type rawStdio struct{ *transport.Stdio }

func (t rawStdio) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := t.Stdio.SendRequest(ctx, req)
	takeRawResult(ctx, req, resp)
	return resp, err
}

type rawStreamableHTTP struct{ *transport.StreamableHTTP }

func (t rawStreamableHTTP) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := t.StreamableHTTP.SendRequest(ctx, req)
	takeRawResult(ctx, req, resp)
	return resp, err
}

type rawSSE struct{ *transport.SSE }

func (t rawSSE) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := t.SSE.SendRequest(ctx, req)
	takeRawResult(ctx, req, resp)
	return resp, err
}
