package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// maxStdioRequests bounds the requests one stdio client may have in
// flight; a request beyond it is refused at once, so that reading goes on
// (a cancellation, or the answer to an elicitation a held call waits for,
// must still get through).
const maxStdioRequests = 1024

// ServeStdio serves one client over in and out until ctx is done or in
// ends. Nothing but protocol messages is written to out.
//
// It is mcpwarden's own stdio transport in front of mcp-go's MCPServer,
// which still handles every message. mcp-go's StdioServer hands each line
// it reads to a new goroutine and back over a channel, decodes a message
// five times before handling it, and serves tool calls on a pool of five
// workers, so that five calls waiting (on an ask, or a slow tool) hold up
// every other tool call of the client. Here one reader reads each line,
// decodes only its head, and serves each request on its own goroutine.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	lifter := newStdinLifter(in, s.inflight, func(wire string) bool { return s.mcp.GetTool(wire) != nil })
	results := &streamSet{}
	c := &stdioConn{
		mcp:    s.mcp,
		logger: s.logger,
		out:    streamWriter{w: out, set: results},
		slots:  make(chan struct{}, maxStdioRequests),
	}
	c.session = newStdioSession(c.write)
	if err := s.mcp.RegisterSession(ctx, c.session); err != nil {
		return fmt.Errorf("registering the stdio session: %w", err)
	}
	defer s.mcp.UnregisterSession(ctx, stdioSessionID)

	ctx = withStreamSet(withLiftedSet(s.mcp.WithContext(ctx, c.session), lifter.set), results)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	notified := make(chan struct{})
	go func() {
		defer close(notified)
		c.sendNotifications(ctx)
	}()
	read := make(chan error, 1)
	go func() { read <- c.readLines(ctx, lifter) }()

	var err error
	select {
	case err = <-read:
	case <-ctx.Done():
		// The reader may stay blocked on in until it ends; it serves
		// nothing more (see dispatch).
	}
	// Requests still running are cancelled, as the client that would read
	// their answers is gone, and waited for.
	cancel()
	c.stop()
	c.session.close()
	<-notified
	lifter.set.releaseAll()
	results.releaseAll()
	return err
}

// A stdioConn is one stdio connection being served.
type stdioConn struct {
	mcp     *server.MCPServer
	logger  *slog.Logger
	session *stdioSession
	slots   chan struct{} // one per request in flight

	writeMu sync.Mutex
	out     io.Writer

	mu       sync.Mutex // guards stopped and starting requests
	stopped  bool
	requests sync.WaitGroup
}

// The stdioHead of a message is what the transport reads of it to route
// it: a request (method and id), a notification (method, no id) or a
// response to one of the session's own requests (id, result or error).
type stdioHead struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// readLines reads lines until in ends (nil) or fails, handing each
// complete one to dispatch. A last line without its newline is dropped,
// as mcp-go's transport drops it.
func (c *stdioConn) readLines(ctx context.Context, lifter *stdinLifter) error {
	for {
		line, err := lifter.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			c.logger.Error("reading from the stdio client", "err", err)
			return fmt.Errorf("reading from the stdio client: %w", err)
		}
		if !c.dispatch(ctx, line) {
			lifter.set.releaseAll() // what that line lifted, if anything
			return nil
		}
	}
}

// dispatch routes one line: a response to the session's request that
// waits for it, a notification to mcp-go at once (in order, on the
// reader), a request to mcp-go on a goroutine of its own. It reports
// false once the connection has stopped.
func (c *stdioConn) dispatch(ctx context.Context, line []byte) bool {
	if c.isStopped() {
		return false
	}
	if len(bytes.TrimSpace(line)) == 0 {
		return true
	}
	var head stdioHead
	if err := json.Unmarshal(line, &head); err != nil {
		c.writeMessage(mcp.NewJSONRPCError(mcp.NewRequestId(nil), mcp.PARSE_ERROR, "Parse error", nil))
		return true
	}
	if (head.Result != nil || head.Error != nil) && c.session.answer(&head) {
		return true
	}
	if head.ID == nil || string(head.ID) == "null" {
		c.writeMessage(c.handle(ctx, nil, line))
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return false
	}
	select {
	case c.slots <- struct{}{}:
	default:
		c.writeMessage(mcp.NewJSONRPCError(requestID(head.ID), mcp.INTERNAL_ERROR,
			fmt.Sprintf("mcpwarden refused this request: %d requests of this client are in flight already; wait for some to finish", maxStdioRequests), nil))
		return true
	}
	c.requests.Add(1)
	go func() {
		defer c.requests.Done()
		defer func() { <-c.slots }()
		c.writeMessage(c.handle(ctx, head.ID, line))
	}()
	return true
}

// handle has mcp-go handle one message and returns its response, nil for
// a notification. A handler that panics gets the request an internal error
// rather than ending the process.
func (c *stdioConn) handle(ctx context.Context, id json.RawMessage, line []byte) (resp mcp.JSONRPCMessage) {
	defer func() {
		if r := recover(); r != nil {
			c.logger.Error("a handler panicked serving a stdio message", "panic", r)
			if id != nil {
				resp = mcp.NewJSONRPCError(requestID(id), mcp.INTERNAL_ERROR, fmt.Sprintf("internal panic: %v", r), nil)
			}
		}
	}()
	return c.mcp.HandleMessage(ctx, line)
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
// started.
func (c *stdioConn) stop() {
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
	c.requests.Wait()
}

// sendNotifications writes the notifications mcp-go queues for the client
// until ctx is done.
func (c *stdioConn) sendNotifications(ctx context.Context) {
	for {
		select {
		case n := <-c.session.notifications:
			c.writeMessage(n)
		case <-ctx.Done():
			return
		}
	}
}

// writeMessage encodes msg and writes it to the client; nil writes nothing.
func (c *stdioConn) writeMessage(msg mcp.JSONRPCMessage) {
	if msg == nil {
		return
	}
	b, err := json.Marshal(msg)
	if err == nil {
		err = c.write(b)
	}
	if err != nil {
		c.logger.Error("writing to the stdio client", "err", err)
	}
}

// write writes one encoded message and its newline to the client, whole:
// messages written at once do not interleave.
func (c *stdioConn) write(msg []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.out.Write(append(msg, '\n'))
	return err
}
