// Package stdio is mcpwarden's stdio transport: one client served over a
// process's standard input and output in front of mcp-go's MCPServer (see
// Serve). It knows nothing of policy; proxy.ServeStdio runs it with the
// server's MCPServer, the calls it serves itself and its in-flight budget.
package stdio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/proxy/wire"
)

// MaxRequests bounds the requests one stdio client may have in
// flight; a request beyond it is refused at once, so that reading goes on
// (a cancellation, or the answer to an elicitation a held call waits for,
// must still get through).
const MaxRequests = 1024

// Serve serves one client of srv over in and out until ctx is done or in
// ends, counting large arguments and results in budget. Nothing but
// protocol messages is written to out.
//
// It is mcpwarden's own stdio transport in front of mcp-go's MCPServer,
// which handles every message but the tools/calls that calls serves.
// mcp-go's StdioServer hands each line it reads to a new goroutine and
// back over a channel, decodes a message five times before handling it,
// and serves tool calls on a pool of five workers, so that five calls
// waiting (on an ask, or a slow tool) hold up every other tool call of
// the client. Here one goroutine at a time reads
// a line and decodes only its head; a request is served on the goroutine
// that read it, after it handed reading on (see readLines).
//
// calls, when set, serves the tools/calls it takes (see wire.CallServer)
// in place of HandleMessage.
func Serve(ctx context.Context, srv *server.MCPServer, calls wire.CallServer, budget *wire.Budget, logger *slog.Logger, in io.Reader, out io.Writer) error {
	lifter := wire.NewStdinLifter(in, budget, func(wire string) bool { return srv.GetTool(wire) != nil })
	results := &wire.StreamSet{}
	c := &stdioConn{
		mcp:      srv,
		calls:    calls,
		logger:   logger,
		slots:    make(chan struct{}, MaxRequests),
		inflight: map[string]*stdioRequest{},
	}
	c.session = newStdioSession(c.write)
	c.out = newStdioWriter(wire.NewStreamWriter(out, results), c.session.notifications, logger)
	if err := srv.RegisterSession(ctx, c.session); err != nil {
		c.out.stop() // its goroutine ends
		return fmt.Errorf("registering the stdio session: %w", err)
	}
	defer srv.UnregisterSession(ctx, SessionID)

	ctx = wire.WithStreamSet(lifter.WithSet(srv.WithContext(ctx, c.session)), results)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	c.inputEnded, c.turn = make(chan error, 1), make(chan struct{})
	go c.readLines(ctx, lifter)

	var err error
	cause := errors.New("the stdio client ended its input")
	select {
	case err = <-c.inputEnded:
	case <-c.out.failed:
		// The client closed its read end: it reads nothing more. That is
		// the end of the connection, as the end of its input is.
		cause = c.out.err
		c.logger.Warn("the stdio client left while mcpwarden was writing to it; cancelling its requests", "err", cause)
	case <-ctx.Done():
		// The reader may stay blocked on in until it ends; it serves
		// nothing more (see dispatch).
		cause = context.Cause(ctx)
	}
	// Requests still running are cancelled, as the client that would read
	// their answers is gone, and waited for: their answers get
	// FlushWait to reach a client that does not read, and are
	// dropped after it.
	cancel(cause)
	c.stop()
	c.session.close()
	lifter.ReleaseLifted()
	results.ReleaseAll()
	return err
}

// A stdioConn is one stdio connection being served.
type stdioConn struct {
	mcp     *server.MCPServer
	calls   wire.CallServer // nil: HandleMessage serves tools/calls too
	logger  *slog.Logger
	session *stdioSession
	slots   chan struct{} // one per request in flight

	out *stdioWriter

	mu       sync.Mutex // guards stopped, starting requests and inflight
	stopped  bool
	requests sync.WaitGroup
	inflight map[string]*stdioRequest // by id, compacted: requests being served

	inputEnded chan error    // gets why reading ended, once: nil at the end of the input
	turn       chan struct{} // hands reading to a goroutine waiting in awaitTurn
	idle       atomic.Int32  // goroutines waiting in awaitTurn
}

// readLines reads lines, routing each with dispatch, until the input ends
// or fails or the connection stops. When a line is a request to serve, the
// goroutine that read it serves it, and hands reading on first: to a
// goroutine waiting for its turn (see awaitTurn), or a new one. So the
// request starts at once, on the thread that read it, rather than when
// another thread has woken up to take it; and the goroutines that serve
// are kept, so their stacks are already grown to what serving takes
// (growing a new goroutine's stack cost a tenth of the CPU of a call).
// Only one goroutine reads at a time, so lines are routed in the order
// sent. A last line without its newline is dropped, as mcp-go's transport
// drops it.
func (c *stdioConn) readLines(ctx context.Context, lifter *wire.StdinLifter) {
	for {
		line, err := lifter.ReadLine()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			} else {
				c.logger.Error("reading from the stdio client", "err", err)
				err = fmt.Errorf("reading from the stdio client: %w", err)
			}
			c.inputEnded <- err
			return
		}
		req, more := c.dispatch(ctx, line)
		if !more {
			lifter.ReleaseLifted() // what that line lifted, if anything
			c.inputEnded <- nil
			return
		}
		if req == nil {
			continue
		}
		select {
		case c.turn <- struct{}{}:
		default:
			go c.readLines(ctx, lifter)
		}
		c.serve(ctx, req)
		if !c.awaitTurn(ctx) {
			return
		}
	}
}

// maxStdioIdle is how many goroutines that have served a request may wait
// for their turn to read; one more ends instead.
const maxStdioIdle = 64

// awaitTurn waits until reading is handed to this goroutine (true), or
// ends it (false) when enough wait already or the connection is done.
func (c *stdioConn) awaitTurn(ctx context.Context) bool {
	if c.idle.Add(1) > maxStdioIdle {
		c.idle.Add(-1)
		return false
	}
	defer c.idle.Add(-1)
	select {
	case <-c.turn:
		return true
	case <-ctx.Done():
		return false
	}
}

// A stdioRequest is a request dispatch has admitted: it holds a slot and
// is counted in requests until served.
type stdioRequest struct {
	id        json.RawMessage
	key       string // id, compacted
	method    string
	line      []byte
	cancelled bool               // the client cancelled it; guarded by the conn's mu
	cancel    context.CancelFunc // cancels a call served by calls; guarded by the conn's mu
}

// dispatch routes one line: a response to the session's request that
// waits for it, a notification to mcp-go at once (in order, on the
// reader); a request it admits and returns, for the caller to serve. It
// reports more as false once the connection has stopped.
func (c *stdioConn) dispatch(ctx context.Context, line []byte) (req *stdioRequest, more bool) {
	if c.isStopped() {
		return nil, false
	}
	if len(bytes.TrimSpace(line)) == 0 {
		return nil, true
	}
	var head wire.Head
	if !wire.DecodeHead(line, &head, nil) {
		c.writeMessage(mcp.NewJSONRPCError(mcp.NewRequestId(nil), mcp.PARSE_ERROR, "Parse error", nil))
		return nil, true
	}
	if (head.Result != nil || head.Error != nil) && c.session.answer(&head) {
		return nil, true
	}
	if head.ID == nil || string(head.ID) == "null" {
		if head.Method == string(mcp.MethodNotificationCancelled) {
			c.cancelled(line)
		}
		c.writeMessage(c.handle(ctx, nil, line))
		return nil, true
	}
	req, refused, more := c.admit(head.ID, head.Method, line)
	if refused != nil {
		c.writeMessage(refused) // not under mu: a client that does not read must not hold up stop
	}
	return req, more
}

// admit takes a slot for a request and registers it in progress, or
// returns the refusal to write when every slot is taken; more is false
// once the connection has stopped.
func (c *stdioConn) admit(id json.RawMessage, method string, line []byte) (req *stdioRequest, refused mcp.JSONRPCMessage, more bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil, nil, false
	}
	select {
	case c.slots <- struct{}{}:
	default:
		return nil, mcp.NewJSONRPCError(requestID(id), mcp.INTERNAL_ERROR,
			fmt.Sprintf("mcpwarden refused this request: %d requests of this client are in flight already; wait for some to finish", MaxRequests), nil), true
	}
	c.requests.Add(1)
	req = &stdioRequest{id: id, key: wire.IDKey(id), method: method, line: line}
	if _, dup := c.inflight[req.key]; !dup {
		c.inflight[req.key] = req
	}
	return req, nil, true
}

// cancelled marks the request a notifications/cancelled names, if it is
// in progress, so that it gets no response (MCP: a request the client
// cancelled SHOULD NOT be answered), and cancels the context of a call
// served by calls; mcp-go cancels the context of those it handles.
func (c *stdioConn) cancelled(line []byte) {
	id, ok := wire.CancelledID(line)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if req, ok := c.inflight[id]; ok {
		req.cancelled = true
		if req.cancel != nil {
			req.cancel()
		}
	}
}

// serve has mcp-go handle an admitted request and writes its response.
// The request's slot is freed before its response is written: a client
// that has its answer may send the next request at once, and finds the
// slot free.
func (c *stdioConn) serve(ctx context.Context, req *stdioRequest) {
	defer c.requests.Done()
	resp := c.serveCall(ctx, req)
	if resp == nil {
		resp = c.handle(ctx, req.id, req.line)
	}
	c.mu.Lock()
	if c.inflight[req.key] == req {
		delete(c.inflight, req.key)
	}
	cancelled := req.cancelled
	c.mu.Unlock()
	<-c.slots
	if cancelled {
		return
	}
	c.writeMessage(resp)
}

// serveCall has calls serve req when it is a tools/call they take, with a
// context that the client's notifications/cancelled for it cancels, and
// returns its response; nil when calls do not serve it.
func (c *stdioConn) serveCall(ctx context.Context, req *stdioRequest) (resp mcp.JSONRPCMessage) {
	if c.calls == nil || req.method != string(mcp.MethodToolsCall) {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.mu.Lock()
	req.cancel = cancel
	if req.cancelled {
		cancel()
	}
	c.mu.Unlock()
	defer c.recovered(req.id, &resp)
	resp, _ = c.calls.ServeCall(ctx, req.id, req.line) // nil when not served
	return resp
}

// handle has mcp-go handle one message and returns its response, nil for
// a notification.
func (c *stdioConn) handle(ctx context.Context, id json.RawMessage, line []byte) (resp mcp.JSONRPCMessage) {
	defer c.recovered(id, &resp)
	return c.mcp.HandleMessage(ctx, line)
}

// recovered, deferred by what serves the message with id, turns a panic
// of a handler into an internal error for that request (nothing for a
// notification) rather than the end of the process.
func (c *stdioConn) recovered(id json.RawMessage, resp *mcp.JSONRPCMessage) {
	if r := recover(); r != nil {
		c.logger.Error("a handler panicked serving a stdio message", "panic", r)
		if id != nil {
			*resp = mcp.NewJSONRPCError(requestID(id), mcp.INTERNAL_ERROR, fmt.Sprintf("internal panic: %v", r), nil)
		}
	}
}

// requestID is the JSON-RPC id raw holds, as received, for an error
// response.
func requestID(raw json.RawMessage) mcp.RequestId { return mcp.NewRequestId(raw) }

func (c *stdioConn) isStopped() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopped
}

// stop makes dispatch serve nothing more and waits for the requests it
// started; after FlushWait it stops writing, so that requests whose
// answers a client that does not read holds up return.
func (c *stdioConn) stop() {
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
	served := make(chan struct{})
	go func() {
		c.requests.Wait()
		close(served)
	}()
	flush := time.NewTimer(FlushWait)
	defer flush.Stop()
	select {
	case <-served:
	case <-flush.C:
		c.logger.Warn("the stdio client is not reading; dropping the answers it has not taken", "waited", FlushWait)
	}
	c.out.stop()
	<-served
}

// writeMessage encodes msg and writes it to the client; nil writes nothing.
func (c *stdioConn) writeMessage(msg mcp.JSONRPCMessage) {
	if msg == nil {
		return
	}
	b, encoded := msg.(wire.Encoded)
	var err error
	if !encoded {
		b, err = json.Marshal(msg)
	}
	if err == nil {
		err = c.write(context.Background(), b)
	}
	// A client that left is logged once, as the connection ends.
	if err != nil && !errors.Is(err, errStdioClosed) && !errors.Is(err, errClientLeft) {
		c.logger.Error("writing to the stdio client", "err", err)
	}
}

// write writes one encoded message and its newline to the client, whole:
// messages written at once do not interleave. It stops waiting when ctx
// ends (a request of ours that shutdown cancelled), or when writing ends.
func (c *stdioConn) write(ctx context.Context, msg []byte) error {
	return c.out.write(ctx, append(msg, '\n'))
}
