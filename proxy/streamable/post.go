package streamable

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/internal/rawjson"
	"github.com/mcpwarden/mcpwarden/proxy/sessiontable"
	"github.com/mcpwarden/mcpwarden/proxy/wire"
)

// A front is the handler behind the guard: it serves the POSTs of the
// sessions this listener initialized itself and hands everything else to
// mcp-go's streamable HTTP server (see the package doc for which is
// which). mcp-go's server reads each POST's head twice, hands the request
// to a goroutine of its own that forwards notifications, and makes
// channels and context values for every request whether the server
// sends the client anything or not; here the head is read once, the
// request is handled on the goroutine that serves the HTTP request, and
// the event stream costs nothing until something is sent on it. It is
// safe for concurrent use.
type front struct {
	mcp    *server.MCPServer
	calls  wire.CallServer // nil: HandleMessage serves tools/calls too
	stream *server.StreamableHTTPServer
	ids    *sessiontable.Table
	logger *slog.Logger
	// httpContext is what mcp-go's WithHTTPContextFunc is given: it adds
	// what the listener carries into each request's context.
	httpContext server.HTTPContextFunc
	// versions are the protocol versions the transport serves, which
	// server/discover reports.
	versions []string

	// registered are the sessions mcp-go registered with the MCP server
	// at initialize, by ID, until they end (forget).
	registered sync.Map // string → baseSession
	// answers are the requests sent to clients on the event streams of
	// POSTs served here, waiting for the client's answer.
	answers sync.Map // answerKey → chan clientAnswer
	// requestIDs numbers the requests sent to clients here, from
	// firstRequestID.
	requestIDs atomic.Int64
	// calling are the cancels of the tools/calls calls serves, by
	// session and id, which the client's notifications/cancelled calls.
	calling sync.Map // callKey → *context.CancelFunc
}

// callKey names a request of a client's session: its id, compacted.
type callKey struct {
	session string
	id      string
}

// firstRequestID is where the IDs of the requests sent to clients here
// start. mcp-go numbers the requests it sends (sampling and roots on the
// GET stream) from 1 with a counter of its own, so these start far from
// there: an answer must reach the one request that asked for it.
const firstRequestID = 1 << 32

// newFront returns the front of stream, which serves h.MCP, with the
// context function httpContext.
func newFront(h Host, stream *server.StreamableHTTPServer, ids *sessiontable.Table, httpContext server.HTTPContextFunc) *front {
	f := &front{mcp: h.MCP, calls: h.Calls, stream: stream, ids: ids, logger: h.Logger, httpContext: httpContext, versions: server.FilterSupportedVersions(stream)}
	f.requestIDs.Store(firstRequestID - 1)
	return f
}

// A baseSession is the session mcp-go registers at initialize: a POST
// served here is served with it, through a postSession. Every interface
// mcp-go asks a session for is listed, so that nothing of it is lost, and
// SetProtocolVersion, which restore reads it by (protocolVersioned).
type baseSession interface {
	server.SessionWithTools
	server.SessionWithResources
	server.SessionWithResourceTemplates
	server.SessionWithLogging
	server.SessionWithClientInfo
	server.SessionWithProtocolVersion
	server.SessionWithStreamableHTTPConfig
	server.SessionWithSubscriptionFilter
	server.SessionWithSampling
	server.SessionWithElicitation
	server.SessionWithRoots
	SetProtocolVersion(string)
}

// A postHead is the head of a POSTed message, and the protocol version
// its params._meta declares, which mcp-go reads to tell the protocol's
// era.
type postHead struct {
	wire.Head
	Params struct {
		Meta *mcp.Meta `json:"_meta"`
	} `json:"params"`
}

// decode reads body into h as json.Unmarshal(body, h) reads it, and
// reports whether json.Unmarshal would succeed.
func (h *postHead) decode(body []byte) bool {
	return wire.DecodeHead(body, &h.Head, func(v []byte) error {
		if rawjson.IsNull(v) {
			return nil
		}
		return rawjson.Object(v, func(key string, v []byte) error {
			if rawjson.Named(key, "_meta") {
				return wire.ReadMeta(v, &h.Params.Meta)
			}
			return nil
		})
	})
}

// answerKey names a request sent to the client of a session.
type answerKey struct {
	session string
	id      int64
}

// A clientAnswer is a client's answer to a request sent to it: its
// result, or the error it answered with.
type clientAnswer struct {
	result json.RawMessage
	err    error
}

// ServeHTTP serves r: a POST it takes over itself, anything else through
// mcp-go's server.
func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		f.stream.ServeHTTP(w, r)
		if r.Method == http.MethodDelete {
			f.forget(r.Header.Get(server.HeaderKeySessionID))
		}
		return
	}
	body, r, err := bodyOf(r)
	var head postHead
	if err != nil || !head.decode(body) {
		f.stream.ServeHTTP(w, r) // its error is the one clients know
		return
	}
	switch {
	case head.Method == string(mcp.MethodInitialize):
		f.initialize(w, r)
	case head.Method != "" && head.ID != nil && string(head.ID) != "null":
		// Without a writer that flushes, mcp-go's server answers
		// without an event stream.
		if base, ok := f.served(r, &head); ok && canStream(w) {
			f.serveRequest(w, r, base, &head.Head, body)
			return
		}
		f.stream.ServeHTTP(w, r)
	case head.Method == "" && head.ID != nil && (!jsonEmpty(head.Result) || !jsonEmpty(head.Error)):
		if _, ok := f.served(r, &head); ok && f.deliver(r.Header.Get(server.HeaderKeySessionID), &head.Head) {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		f.stream.ServeHTTP(w, r)
	default:
		if head.Method == string(mcp.MethodNotificationCancelled) {
			if _, ok := f.served(r, &head); ok {
				f.cancelCall(r.Header.Get(server.HeaderKeySessionID), body)
			}
		}
		f.stream.ServeHTTP(w, r)
	}
}

// bodyOf returns the bytes of r's body, read whole by the guard, and r
// with a body mcp-go can still read.
func bodyOf(r *http.Request) ([]byte, *http.Request, error) {
	if b, ok := r.Body.(*wire.Body); ok {
		return b.Bytes(), r, nil
	}
	if r.Body == nil {
		return nil, r, nil
	}
	b, err := io.ReadAll(r.Body)
	r.Body = wire.NewBody(b)
	return b, r, err
}

// served returns the registered session of the POST r with head, when r
// is one served here: a message of a session this listener initialized
// and mcp-go would serve, on a protocol before 2026-07-28. Whatever mcp-go
// would refuse (the wrong Content-Type, a protocol version it does not
// know, a session no longer valid) is left to it, so that its answer is
// the one the client gets.
func (f *front) served(r *http.Request, head *postHead) (baseSession, bool) {
	if modern(r) || mcp.IsModernProtocol(head.Params.Meta.ProtocolVersion()) {
		return nil, false
	}
	if v := r.Header.Get(mcp.HeaderProtocolVersion); v != "" && !mcp.IsValidProtocolVersion(v) {
		return nil, false
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return nil, false
	}
	id := r.Header.Get(server.HeaderKeySessionID)
	if id == "" {
		return nil, false
	}
	base, ok := f.registered.Load(id)
	if !ok {
		return nil, false
	}
	if terminated, err := f.ids.Validate(id); err != nil || terminated {
		return nil, false
	}
	return base.(baseSession), true
}

// canStream reports whether w can carry an event stream.
func canStream(w http.ResponseWriter) bool {
	_, ok := w.(http.Flusher)
	return ok
}

// initialize has mcp-go serve r, an initialize, and keeps the session it
// registers for the session's later POSTs, once the session is the
// listener's (its ID was sent to the client and claimed).
func (f *front) initialize(w http.ResponseWriter, r *http.Request) {
	held, ok := r.Context().Value(issuingKey{}).(*issuing)
	if !ok {
		r, held = withIssuing(r)
	}
	f.stream.ServeHTTP(w, r)
	base, ok := held.session().(baseSession)
	if !ok || base.SessionID() == "" || r.Context().Err() != nil || !f.ids.Known(base.SessionID()) {
		return // not registered, or not the listener's: mcp-go serves it
	}
	f.registered.Store(base.SessionID(), base)
}

// forget drops the registered session id, which ended.
func (f *front) forget(id string) {
	if f != nil && id != "" {
		f.registered.Delete(id)
	}
}

// serveRequest has mcp-go handle the request body of r on base, with the
// context mcp-go's server would give it, and writes its response; calls
// serves a tools/call it takes.
func (f *front) serveRequest(w http.ResponseWriter, r *http.Request, base baseSession, head *wire.Head, body []byte) {
	ps := &postSession{baseSession: base, front: f, w: w}
	ctx := f.mcp.WithContext(r.Context(), ps)
	ctx = server.WithSupportedProtocolVersions(ctx, f.versions)
	ctx = f.httpContext(ctx, r)
	if f.calls != nil && head.Method == string(mcp.MethodToolsCall) {
		if resp, ok := f.serveCall(ctx, base.SessionID(), head.ID, body); ok {
			ps.finish(r.Context(), resp)
			return
		}
	}
	ps.finish(r.Context(), f.mcp.HandleMessage(ctx, body))
}

// serveCall has calls serve the tools/call body with id, of session,
// with a context that the client's notifications/cancelled for it
// cancels.
func (f *front) serveCall(ctx context.Context, session string, id json.RawMessage, body []byte) (mcp.JSONRPCMessage, bool) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	key, entry := callKey{session: session, id: wire.IDKey(id)}, &cancel
	if _, dup := f.calling.LoadOrStore(key, entry); !dup {
		defer f.calling.CompareAndDelete(key, entry)
	}
	return f.calls.ServeCall(ctx, id, body)
}

// cancelCall cancels the call served by calls that the
// notifications/cancelled body of session names, if there is one.
func (f *front) cancelCall(session string, body []byte) {
	id, ok := wire.CancelledID(body)
	if !ok {
		return
	}
	if cancel, ok := f.calling.Load(callKey{session: session, id: id}); ok {
		(*cancel.(*context.CancelFunc))()
	}
}

// deliver hands the answer head of the client of session to the request
// sent to it here that waits for it, and reports whether there was one.
// An answer is delivered once; one whose id names no request waiting here
// is left to mcp-go, as are the answers mcp-go itself acknowledges
// without delivering (an empty result or error).
func (f *front) deliver(session string, head *wire.Head) bool {
	id, err := strconv.ParseInt(string(head.ID), 10, 64)
	if err != nil {
		return false
	}
	waiting, ok := f.answers.LoadAndDelete(answerKey{session: session, id: id})
	if !ok {
		return false
	}
	waiting.(chan clientAnswer) <- answerOf(head) // buffered for the one answer
	return true
}

// answerOf is the answer head carries, read as mcp-go reads it, in its
// words (the ask that waits for it records them): an error, when there is
// one, as "elicitation/create error CODE: MESSAGE".
func answerOf(head *wire.Head) clientAnswer {
	if head.Error == nil {
		return clientAnswer{result: head.Result}
	}
	var e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(head.Error, &e); err != nil {
		return clientAnswer{err: fmt.Errorf("failed to parse error: %v", err)}
	}
	return clientAnswer{err: fmt.Errorf("%s error %d: %s", mcp.MethodElicitationCreate, e.Code, e.Message)}
}

// jsonEmpty reports whether raw is absent, null, {} or [], as mcp-go
// tells an answer it acknowledges without delivering.
func jsonEmpty(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	switch {
	case len(t) == 0 || string(t) == "null":
		return true
	case t[0] == '{' || t[0] == '[':
		inner := bytes.TrimSpace(t[1:])
		return len(inner) > 0 && inner[0] == t[0]+2 // '}' and ']' follow '{' and '[' by two
	}
	return false
}
