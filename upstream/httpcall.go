package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/client/transport"
)

// Calls to a streamable HTTP upstream of the handshake, sent past mcp-go's
// transport. mcp-go's StreamableHTTP.SendRequest encodes the request with
// reflection, watches the transport's end with a goroutine per request,
// parses the media type and decodes the whole answer into a response,
// and the session's limitTransport had already read that answer once to
// take the result out of it: in the c16 echo profile, upstream.Pool.Call
// cost 21–27 µs of CPU per call that way, 15–22 this way. sendOverHTTP
// sends the POST mcp-go would send (the same body and headers, on the
// session's http.Client, so that the result cap, resumption and OAuth
// step-ups stay in the path) and reads the one answer that is common:
// HTTP 200 with a JSON result for the call. Every other answer — an event stream, an
// error, HTTP 401 or 404, anything unexpected — is handed to mcp-go's
// transport as the answer to the same request (see handOver), so that
// server requests and notifications on a call's stream, SEP-1699 polling,
// session expiry and authorization are handled by the code that handles
// them for every other request, and the upstream still gets the call
// once.

// httpCalls is what sendOverHTTP needs of a streamable HTTP session besides
// mcp-go's transport: the session's HTTP client (without the
// prefetchTransport) and what its transport was built with.
type httpCalls struct {
	client     *http.Client
	url        string
	headers    map[string]string
	headerFunc func(context.Context) map[string]string // nil adds none
}

// sendOverHTTP sends req, a tools/call on the session (of the handshake,
// over streamable HTTP), past mcp-go's transport t, and puts its result
// in *dst as it came. It fails, and cancels the call upstream when ctx
// ended, as rawStreamableHTTP's SendRequest does; the session's end ends
// the request, as closing mcp-go's transport ends the requests it sent.
func (s *session) sendOverHTTP(ctx context.Context, t rawStreamableHTTP, req transport.JSONRPCRequest, dst *json.RawMessage) (*transport.JSONRPCResponse, error) {
	key, body, err := encodeCall(ctx, &req)
	if err != nil {
		return nil, err
	}
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.life, cancel)()
	hreq, err := t.calls.newRequest(hctx, body, t.GetSessionId(), s.protocol, t.GetOAuthHandler())
	if err != nil {
		// Nothing was sent: mcp-go's transport fails the same way, or
		// sends it.
		return t.SendRequest(withRawResult(ctx, dst), req)
	}
	resp, err := t.calls.client.Do(hreq)
	if err != nil {
		cancelUpstream(ctx, t, req)
		return nil, fmt.Errorf("failed to send request: %w", err)
	}
	if resp.StatusCode != http.StatusOK || mediaType(resp.Header.Get("Content-Type")) != "application/json" {
		return t.handOver(ctx, req, dst, resp)
	}
	answer, err := io.ReadAll(resp.Body) // capped by the session's limitTransport
	resp.Body.Close()
	if err != nil {
		cancelUpstream(ctx, t, req)
		return nil, fmt.Errorf("failed to decode response: %w", err)
	}
	if id, result := responseParts(answer); result != nil && string(id) == key {
		*dst = result
		return &transport.JSONRPCResponse{JSONRPC: req.JSONRPC, ID: req.ID, Result: emptyCallResult}, nil
	}
	// An error answer, or one that is not this call's result to take:
	// mcp-go reads it.
	resp.Body = io.NopCloser(bytes.NewReader(answer))
	return t.handOver(ctx, req, dst, resp)
}

// newRequest is the POST of body that mcp-go's transport would send for a
// request on the session: its headers, in the order it sets them. It
// fails only when no Authorization header can be had.
func (c *httpCalls) newRequest(ctx context.Context, body []byte, session, protocol string, oauth *transport.OAuthHandler) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		h.Set(transport.HeaderKeySessionID, session)
	}
	if protocol != "" {
		h.Set(transport.HeaderKeyProtocolVersion, protocol)
	}
	for k, v := range c.headers {
		h.Set(k, v)
	}
	if oauth != nil {
		auth, err := oauth.GetAuthorizationHeader(ctx)
		if err != nil {
			return nil, err
		}
		h.Set("Authorization", auth)
	}
	if c.headerFunc != nil {
		for k, v := range c.headerFunc(ctx) {
			h.Set(k, v)
		}
	}
	return req, nil
}

// mediaType is the media type of contentType, lower case, as
// mime.ParseMediaType reads it ("" if it cannot). The spellings upstreams
// answer with are matched without the parser, which every answer of
// every call went through three times (about 1 µs each).
func mediaType(contentType string) string {
	switch contentType {
	case "application/json", "application/json; charset=utf-8", "text/event-stream":
		mt, _, _ := strings.Cut(contentType, ";")
		return mt
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	return mt
}

// handOver has mcp-go's transport handle resp as its answer to req: it
// sends req as it would, and the session's prefetchTransport hands it
// resp instead of sending it again. Should the transport fail before it
// asks for an answer (its session has ended), resp is closed.
func (t rawStreamableHTTP) handOver(ctx context.Context, req transport.JSONRPCRequest, dst *json.RawMessage, resp *http.Response) (*transport.JSONRPCResponse, error) {
	p := &prefetched{resp: resp}
	defer p.discard()
	return t.SendRequest(context.WithValue(withRawResult(ctx, dst), prefetchedKey{}, p), req)
}

// A prefetched answer is handed to the next request made with its
// context, once.
type prefetched struct {
	resp  *http.Response
	taken bool
}

func (p *prefetched) discard() {
	if !p.taken {
		p.resp.Body.Close()
	}
}

type prefetchedKey struct{}

// A prefetchTransport answers a request whose context carries a
// prefetched answer with it, the first time; it sends every other
// request through base. It is the outermost layer of a streamable HTTP
// session's client, so that mcp-go gets the answer as sendOverHTTP got it.
type prefetchTransport struct{ base http.RoundTripper }

func (t prefetchTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	p, _ := req.Context().Value(prefetchedKey{}).(*prefetched)
	if p == nil || p.taken || req.Method != http.MethodPost {
		return t.base.RoundTrip(req)
	}
	if req.Body != nil {
		req.Body.Close()
	}
	p.taken = true
	resp := *p.resp
	resp.Request = req
	return &resp, nil
}

// callsOf is the httpCalls of a session whose transport uses client. It
// keeps a copy of client as it is: the prefetchTransport put around
// client's transport afterwards is for mcp-go's requests only.
func callsOf(spec Spec, client *http.Client) *httpCalls {
	c := *client
	return &httpCalls{client: &c, url: spec.URL, headers: spec.Headers, headerFunc: spec.HeaderFunc}
}
