package upstream

// The transports mcpwarden puts around mcp-go's: they take tools/call
// results raw, and cancel timed-out requests over HTTP.

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"time"

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
// asked for it through the request's context. BenchmarkForwardResult in
// proxy and the bench harness measure the difference.

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

// rawResultDst is the destination in ctx, or nil.
func rawResultDst(ctx context.Context) *json.RawMessage {
	dst, _ := ctx.Value(rawResultKey{}).(*json.RawMessage)
	return dst
}

// takeRawResult moves the result of a successful tools/call response into
// the destination in ctx, if there is one and the result is not there
// already (an HTTP upstream's JSON answer is taken before the transport
// decodes it: see rawStreamableHTTP). A multi round-trip result is left
// to the client to fulfil, unless the call relays it (WithInputRelay).
func takeRawResult(ctx context.Context, req transport.JSONRPCRequest, resp *transport.JSONRPCResponse) {
	dst := rawResultDst(ctx)
	if dst == nil || resp == nil || resp.Error != nil || req.Method != string(mcp.MethodToolsCall) || (asksForInput(resp.Result) && !relaysInput(ctx)) {
		return
	}
	if *dst == nil {
		*dst = resp.Result
	}
	resp.Result = emptyCallResult
}

// finishCall is what a transport returns for req: the response with the
// raw result of a tools/call taken (see takeRawResult), or, for a
// tools/call whose response was cut for being too large, ErrResultTooLarge
// (see tooLargeResponse); a tools/list result is also copied for
// listTools (see keepListPage).
func finishCall(ctx context.Context, req transport.JSONRPCRequest, resp *transport.JSONRPCResponse, err error) (*transport.JSONRPCResponse, error) {
	if err == nil && req.Method == string(mcp.MethodToolsCall) && rawResultDst(ctx) != nil {
		if err := tooLargeResponse(resp); err != nil {
			return nil, err
		}
	}
	takeRawResult(ctx, req, resp)
	keepListPage(ctx, req, resp)
	return resp, err
}

// The wrappers embed mcp-go's concrete transports, so every optional
// interface the client looks for (server-to-client requests, lost
// connections, HTTP protocol headers) is still there; only SendRequest is
// replaced.

// Over stdio the result is taken one step earlier, before mcp-go's
// transport decodes the response line (twice, as it first looks at what
// kind of message it is): the lineLimiter between the child's stdout and
// the transport puts the result of each response the stash expects in the
// stash, and passes the response on with an empty result.
//
// The tools/calls sendCall sends go past the transport: see sendDirect.
type rawStdio struct {
	*transport.Stdio
	results *resultStash
	stdin   *os.File // the child's stdin, which the transport writes to as well
}

func (t rawStdio) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	narrowCapabilities(ctx, &req)
	addInputAnswers(ctx, &req)
	dst := rawResultDst(ctx)
	if dst == nil || req.Method != string(mcp.MethodToolsCall) || req.ID.IsNil() {
		resp, err := t.Stdio.SendRequest(ctx, req)
		return finishCall(ctx, req, resp, err)
	}
	key, err := idText(req.ID)
	if err != nil {
		resp, err := t.Stdio.SendRequest(ctx, req)
		return finishCall(ctx, req, resp, err)
	}
	t.results.expect(key)
	defer t.results.forget(key)
	resp, err := t.Stdio.SendRequest(ctx, req)
	if raw, ok := t.results.take(key); ok && resp != nil {
		*dst, resp.Result = raw, emptyCallResult
		return resp, err
	}
	return finishCall(ctx, req, resp, err) // the limiter passed the response on whole, or cut it
}

// idText is the JSON text of id, as json.Marshal writes it. The integer
// ids mcp-go's client numbers its requests with are formatted directly,
// without json.Marshal's reflection, for measured speed (it runs for
// every call; about 1 % of the proxy's CPU in the c16 echo profile).
func idText(id mcp.RequestId) (string, error) {
	if n, ok := id.Value().(int64); ok {
		return strconv.FormatInt(n, 10), nil
	}
	b, err := json.Marshal(id)
	return string(b), err
}

// Over streamable HTTP a JSON answer's result is taken before the
// transport decodes the body, by the session's limitTransport: it looks
// for the rawCall this puts in the context of the HTTP request, and only
// takes a result whose id is that call's, so no other request the
// transport makes with the same context (a re-initialize) is touched.
// While the session probes the upstream's generation (probe is not nil),
// the server/discover answer is noted, and initialize is not sent.
//
// The tools/calls sendCall sends go past the transport: see sendOverHTTP.
type rawStreamableHTTP struct {
	*transport.StreamableHTTP
	probe *eraProbe
	calls *httpCalls
}

// A rawCall is a tools/call whose HTTP answer's result goes to dst.
type rawCall struct {
	id  string // the JSON text of the request's id
	dst *json.RawMessage
}

type rawCallKey struct{}

// rawCallOf is the rawCall in ctx, or nil.
func rawCallOf(ctx context.Context) *rawCall {
	c, _ := ctx.Value(rawCallKey{}).(*rawCall)
	return c
}

func (t rawStreamableHTTP) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	if t.probe != nil && req.Method == string(mcp.MethodInitialize) {
		return nil, errSpeaksHandshake
	}
	narrowCapabilities(ctx, &req)
	addInputAnswers(ctx, &req)
	hctx := ctx
	if dst := rawResultDst(ctx); dst != nil && req.Method == string(mcp.MethodToolsCall) && !req.ID.IsNil() {
		if id, err := idText(req.ID); err == nil {
			hctx = context.WithValue(ctx, rawCallKey{}, &rawCall{id: id, dst: dst})
		}
	}
	resp, err := t.StreamableHTTP.SendRequest(hctx, req)
	if err != nil {
		cancelUpstream(ctx, t, req)
	} else if t.probe != nil && req.Method == string(mcp.MethodServerDiscover) && resp != nil {
		if resp.Error == nil {
			t.probe.note(resp.Result)
		} else if resp.Error.Code == mcp.UNSUPPORTED_PROTOCOL_VERSION {
			t.probe.noteRefusal(resp.Error.Data)
		}
	}
	return finishCall(ctx, req, resp, err)
}

type rawSSE struct{ *transport.SSE }

func (t rawSSE) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	narrowCapabilities(ctx, &req)
	addInputAnswers(ctx, &req)
	resp, err := t.SSE.SendRequest(ctx, req)
	if err != nil && ctx.Err() == nil {
		// The SSE transport times the wait with a timer of its own, set to
		// the context's deadline, which may fire first: the deadline is
		// then what ended the request, so say so.
		if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
			<-ctx.Done()
			err = ctx.Err()
		}
	}
	if err != nil {
		cancelUpstream(ctx, t, req)
	}
	return finishCall(ctx, req, resp, err)
}

// cancelNotificationTimeout bounds sending a notifications/cancelled.
const cancelNotificationTimeout = 5 * time.Second

// cancelUpstream tells an upstream to stop working on a request whose
// context ended before its response came. mcp-go's client sends
// notifications/cancelled over stdio only, as on protocol 2026-07-28
// ending the HTTP request is the cancellation; on 2025-11-25 and earlier
// a dropped connection is not one, and the notification is how a request
// is cancelled. The HTTP transports send it here for every request, and
// sendCall over stdio for the calls it sends past the client. Best
// effort, off the caller's path.
func cancelUpstream(ctx context.Context, t transport.Interface, req transport.JSONRPCRequest) {
	if ctx.Err() == nil || req.ID.IsNil() || req.Method == string(mcp.MethodInitialize) {
		return
	}
	n := mcp.JSONRPCNotification{
		JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{
			Method: string(mcp.MethodNotificationCancelled),
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{
				"requestId": req.ID,
				"reason":    context.Cause(ctx).Error(),
			}},
		},
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelNotificationTimeout)
		defer cancel()
		_ = t.SendNotification(ctx, n)
	}()
}
