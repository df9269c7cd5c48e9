package stdio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// errClientLeft is why a stdio connection ends when a write to its client
// fails (the client closed its read end, or went away): the requests still
// in flight are cancelled with it, so their result events say so.
var errClientLeft = errors.New("the stdio client left (its end of the connection is closed)")

// errStdioClosed is what a write gets once the connection has stopped
// writing (see stdioWriter.stop).
var errStdioClosed = errors.New("the stdio connection is closed")

// FlushWait bounds how long the answers of requests that finish as a
// stdio connection ends (those cancelled at the end of the shutdown grace,
// or when the input ended) may wait for a client that does not read: past
// it they are dropped, and serving ends.
const FlushWait = time.Second

// A stdioWriter writes a stdio connection's messages to its client, one at
// a time, in the order they were handed over, on a goroutine of its own:
// a writer waits for its message to be written, but may stop waiting (see
// stop) when the client does not read, which a write blocked on the pipe
// could not. The first write that fails ends writing: every later write
// fails at once, and failed is closed.
//
// It also writes the notifications mcp-go queues for the client (notes),
// and, being their one reader, writes those queued before a message is
// handed over ahead of it: a progress notification a call sent before
// its result reaches the client before the result, as the client's SDK
// drops progress for a call it has the result of.
type stdioWriter struct {
	out    io.Writer
	notes  <-chan mcp.JSONRPCNotification
	logger *slog.Logger
	queue  chan stdioWrite
	failed chan struct{} // closed when a write failed: the client left

	once sync.Once
	done chan struct{} // closed when writing ended, failed or stopped
	err  error         // why writing ended; set before done is closed
}

// A stdioWrite is one message handed to the writer, and where it tells
// how its write went.
type stdioWrite struct {
	msg    []byte
	result chan error // buffered for the one result
}

func newStdioWriter(out io.Writer, notes <-chan mcp.JSONRPCNotification, logger *slog.Logger) *stdioWriter {
	w := &stdioWriter{out: out, notes: notes, logger: logger, queue: make(chan stdioWrite), failed: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

// run writes the messages handed over, and the notifications queued,
// until writing ends.
func (w *stdioWriter) run() {
	for {
		select {
		case m := <-w.queue:
			err := w.writeQueuedNotes()
			if err == nil {
				err = w.put(m.msg)
			}
			m.result <- err
			if err != nil {
				return
			}
		case n := <-w.notes:
			if w.writeNote(n) != nil {
				return
			}
		case <-w.done:
			return
		}
	}
}

// writeQueuedNotes writes the notifications queued now, before the
// message run has taken: they were sent before it. Those sent meanwhile
// wait for their turn, so that a server sending notifications without
// end does not hold the message up.
func (w *stdioWriter) writeQueuedNotes() error {
	for queued := len(w.notes); queued > 0; queued-- {
		if err := w.writeNote(<-w.notes); err != nil {
			return err
		}
	}
	return nil
}

// writeNote writes one notification; one that does not encode is logged
// and skipped.
func (w *stdioWriter) writeNote(n mcp.JSONRPCNotification) error {
	b, err := json.Marshal(n)
	if err != nil {
		w.logger.Error("encoding a notification to the stdio client", "err", err)
		return nil
	}
	return w.put(append(b, '\n'))
}

// put writes msg to the client; the first write that fails ends writing.
func (w *stdioWriter) put(msg []byte) error {
	if _, err := w.out.Write(msg); err != nil {
		err = fmt.Errorf("%w: %v", errClientLeft, err)
		if w.end(err) {
			close(w.failed)
		}
		return err
	}
	return nil
}

// write writes msg, whole, and returns how it went; once writing has
// ended it fails at once with why. When ctx ends first it stops waiting:
// a message not yet handed over is not written, one handed over is
// written all the same.
func (w *stdioWriter) write(ctx context.Context, msg []byte) error {
	m := stdioWrite{msg: msg, result: make(chan error, 1)}
	select {
	case w.queue <- m:
	case <-w.done:
		return w.err
	case <-ctx.Done():
		return fmt.Errorf("writing to the stdio client: %w", context.Cause(ctx))
	}
	select {
	case err := <-m.result:
		return err
	case <-ctx.Done():
		return fmt.Errorf("writing to the stdio client: %w", context.Cause(ctx))
	case <-w.done:
		select {
		case err := <-m.result: // written after all
			return err
		default:
			return w.err
		}
	}
}

// stop ends writing: writes waiting, and later ones, fail with
// errStdioClosed. A write the client's pipe holds up stays with the
// writer's goroutine until the pipe takes it or breaks.
func (w *stdioWriter) stop() { w.end(errStdioClosed) }

// end ends writing with err and reports whether it was the first to.
func (w *stdioWriter) end(err error) bool {
	first := false
	w.once.Do(func() {
		first = true
		w.err = err
		close(w.done)
	})
	return first
}
