package upstream

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// Resuming a streamable HTTP upstream's event streams (protocol
// 2025-11-25 and older: "Resumability and Redelivery"). A server may give
// each SSE event an id; a client whose stream broke asks for what followed
// the last event it saw with a GET carrying Last-Event-ID, and the server
// replays it on that GET, which then carries the stream on. mcp-go's
// client does this only for a call's stream that the server ends cleanly
// before the answer (SEP-1699 polling): a stream that breaks fails the
// call, and its standalone GET stream is reopened afresh, so what the
// server sent while it was down is lost. A resumingTransport, under the
// session's limitTransport, does it for both below mcp-go, which sees one
// unbroken stream. Protocol 2026-07-28 dropped resumption, and its
// streams are passed through as they are.

const (
	// resumeDelay is how long a broken stream waits before its first
	// reconnection, when the server asked for no other time with the
	// retry field; each failed reconnection doubles it, up to
	// maxResumeDelay.
	resumeDelay    = 250 * time.Millisecond
	minResumeDelay = 10 * time.Millisecond
	maxResumeDelay = 10 * time.Second
	// pollDelay is how long a GET stream the server ended waits before it
	// is resumed, when the server asked for no other time: mcp-go's
	// listener reopens one after as long.
	pollDelay = time.Second
	// maxResumeFailures is how many reconnections in a row may fail
	// before a stream is given up, and mcp-go sees it break.
	maxResumeFailures = 5
	// maxHeldEvent bounds the event a resumingBody holds back until it is
	// whole. A longer event is passed on as it comes, and a break in its
	// middle is not resumed (the reader has half of it).
	maxHeldEvent = 1 << 20
)

// A resumingTransport makes the event streams of a streamable HTTP
// upstream resumable: the body of a response that is an event stream is a
// resumingBody. Reconnections go through base, as the first request did.
type resumingTransport struct {
	base   http.RoundTripper
	logger *slog.Logger
}

func (t *resumingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || !resumable(req, resp) {
		return resp, err
	}
	resp.Body = &resumingBody{
		t:         t,
		req:       req,
		body:      resp.Body,
		br:        bufio.NewReader(resp.Body),
		listening: req.Method == http.MethodGet && req.Header.Get(mcp.HeaderLastEventID) == "",
		closed:    make(chan struct{}),
	}
	return resp, nil
}

// resumable reports whether resp is an event stream of a protocol that
// resumes streams.
func resumable(req *http.Request, resp *http.Response) bool {
	if resp.StatusCode != http.StatusOK || resp.Body == nil || (req.Method != http.MethodGet && req.Method != http.MethodPost) {
		return false
	}
	if mcp.IsModernProtocol(req.Header.Get(mcp.HeaderProtocolVersion)) {
		return false
	}
	return mediaType(resp.Header.Get("Content-Type")) == "text/event-stream"
}

// A resumingBody is an upstream's event stream that reconnects with
// Last-Event-ID when it breaks. It hands its reader whole events only, so
// that what a reconnection replays follows the last event read, never
// half of one. A call's stream (a POST's, or a GET resuming one) is
// resumed when it breaks; when the server ends it, mcp-go resumes it
// itself if the answer has not come. The standalone GET stream is also
// resumed when the server ends it (a server may close it to be polled),
// so the events between are not lost. A stream with no event id yet, or
// broken in an event longer than maxHeldEvent, cannot be resumed, and its
// reader sees it break.
type resumingBody struct {
	t         *resumingTransport
	req       *http.Request
	listening bool

	br       *bufio.Reader
	out      []byte // whole events, ready to be read
	event    []byte // the event being read, held back until it is whole
	passing  bool   // the event being read was too long to hold, and is being passed on
	lineAt   int    // where in event the line being read starts
	midLine  bool   // the last piece read ended in the middle of a line
	eventID  string // the id field of the event being read
	hasID    bool
	lastID   string        // the id of the last whole event
	retry    time.Duration // the reconnection time the server asked for; 0 if none
	failures int           // reconnections failed in a row
	err      error         // what Read returns once out is empty

	mu     sync.Mutex // guards body and closed's closing, as Close may come from another goroutine
	body   io.ReadCloser
	closed chan struct{}
}

func (b *resumingBody) Read(p []byte) (int, error) {
	for len(b.out) == 0 && b.err == nil {
		b.fill()
	}
	if len(b.out) > 0 {
		n := copy(p, b.out)
		b.out = b.out[n:]
		return n, nil
	}
	return 0, b.err
}

// fill reads one line of the stream, or a piece of one longer than the
// reader's buffer, or reconnects when the stream ended.
func (b *resumingBody) fill() {
	piece, err := b.br.ReadSlice('\n')
	switch {
	case err == nil:
		b.piece(piece, true)
	case errors.Is(err, bufio.ErrBufferFull):
		b.piece(piece, false)
	default:
		b.ended(piece, err)
	}
}

// piece takes a piece of a line, the last one if end: a field of the
// event being read, or the blank line that ends it.
func (b *resumingBody) piece(p []byte, end bool) {
	whole := end && !b.midLine // a line shorter than the buffer comes in one piece
	b.hold(p)
	if b.midLine = !end; !end {
		return
	}
	var line []byte
	switch {
	case whole:
		line = p
	case !b.passing:
		line = b.event[b.lineAt:]
	default:
		// The end of a long line passed on: not blank, and not an id or
		// retry field the resumption needs (the event is not resumed).
		b.lineAt = len(b.event)
		return
	}
	b.lineAt = len(b.event)
	text := bytes.TrimRight(line, "\r\n")
	if len(text) == 0 {
		if b.hasID {
			b.lastID, b.failures = b.eventID, 0
		}
		b.out = append(b.out, b.event...)
		b.event, b.lineAt, b.passing, b.hasID = b.event[:0:0], 0, false, false
		return
	}
	if v, ok := bytes.CutPrefix(text, []byte("id:")); ok {
		v = bytes.TrimPrefix(v, []byte(" "))
		if bytes.IndexByte(v, 0) < 0 { // the SSE spec ignores an id with a NUL
			b.eventID, b.hasID = string(v), true
		}
	} else if v, ok := bytes.CutPrefix(text, []byte("retry:")); ok {
		v = bytes.TrimPrefix(v, []byte(" "))
		if ms, err := strconv.ParseUint(string(v), 10, 31); err == nil && len(v) > 0 && len(bytes.Trim(v, "0123456789")) == 0 {
			b.retry = max(time.Duration(ms)*time.Millisecond, minResumeDelay)
		}
	}
}

// hold adds a piece of the event being read to what is held back, or
// passes it on once the event is too long to hold.
func (b *resumingBody) hold(p []byte) {
	if !b.passing && len(b.event)+len(p) > maxHeldEvent {
		b.out, b.event, b.lineAt, b.passing = append(b.out, b.event...), b.event[:0:0], 0, true
	}
	if b.passing {
		b.out = append(b.out, p...)
		return
	}
	b.event = append(b.event, p...)
}

// ended handles the end of the stream with err, rest being what it read
// of a line before: it reconnects, or ends the body.
func (b *resumingBody) ended(rest []byte, err error) {
	eof := errors.Is(err, io.EOF)
	if b.req.Context().Err() != nil || b.isClosed() || b.lastID == "" || b.passing || (eof && !b.listening) {
		if eof {
			// As it came: the reader decides what an event without its
			// blank line is.
			b.hold(rest)
			b.out = append(b.out, b.event...)
			b.event = b.event[:0:0]
		}
		b.err = err
		return
	}
	// The partial event is dropped: the server replays it whole.
	b.event, b.lineAt, b.midLine, b.hasID = b.event[:0:0], 0, false, false
	if rerr := b.reconnect(eof); rerr != nil {
		b.t.logger.Warn("the upstream's event stream could not be resumed", "last_event_id", b.lastID, "err", rerr)
		if eof {
			b.err = io.EOF
		} else {
			b.err = fmt.Errorf("the upstream's event stream broke (%w) and could not be resumed: %v", err, rerr)
		}
	}
}

// errResumeRefused is a reconnection the server answered with an HTTP
// 4xx: the session or the event id is unknown to it, or it does not
// resume, and asking again will not change that.
var errResumeRefused = errors.New("the server refused to resume the stream")

// reconnect sends GETs with Last-Event-ID until one is answered with an
// event stream, which the body reads from then on. It waits before each
// (the server's retry time, else resumeDelay after a break and pollDelay
// after an end, doubled after each failure),
// and gives up on a refusal, on maxResumeFailures failures in a row, or
// when the request's context ends or the body is closed. A stream the
// server ended (polled) is not a failure.
func (b *resumingBody) reconnect(polled bool) error {
	delay := cmp.Or(b.retry, resumeDelay)
	if polled && b.retry == 0 {
		delay = pollDelay
	}
	if polled {
		b.t.logger.Debug("the upstream ended its event stream; resuming it", "last_event_id", b.lastID)
	} else {
		b.t.logger.Info("the upstream's event stream broke; resuming it", "last_event_id", b.lastID)
	}
	for {
		if b.failures >= maxResumeFailures {
			return fmt.Errorf("%d reconnections failed", b.failures)
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-b.req.Context().Done():
			t.Stop()
			return b.req.Context().Err()
		case <-b.closed:
			t.Stop()
			return errors.New("closed")
		}
		err := b.resume()
		if err == nil {
			return nil
		}
		if errors.Is(err, errResumeRefused) || b.req.Context().Err() != nil {
			return err
		}
		b.failures++
		b.t.logger.Debug("resuming the upstream's event stream failed; trying again", "err", err, "retry_in", delay)
		delay = min(2*delay, maxResumeDelay)
	}
}

// resume sends one GET with Last-Event-ID and, if the server answers with
// an event stream, reads from it in place of the stream that ended.
func (b *resumingBody) resume() error {
	req, err := http.NewRequestWithContext(b.req.Context(), http.MethodGet, b.req.URL.String(), nil)
	if err != nil {
		return err
	}
	req.Header = b.req.Header.Clone()
	req.Header.Del("Content-Type")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(mcp.HeaderLastEventID, b.lastID)
	req.Host = b.req.Host
	resp, err := b.t.base.RoundTrip(req)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		if resp.StatusCode >= 400 && resp.StatusCode < 500 {
			return fmt.Errorf("%w: HTTP %d", errResumeRefused, resp.StatusCode)
		}
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	if mediaType(resp.Header.Get("Content-Type")) != "text/event-stream" {
		resp.Body.Close()
		return fmt.Errorf("%w: it answered %q, not an event stream", errResumeRefused, resp.Header.Get("Content-Type"))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if isClosed(b.closed) {
		resp.Body.Close()
		return errors.New("closed")
	}
	b.body.Close()
	b.body, b.br = resp.Body, bufio.NewReader(resp.Body)
	return nil
}

func (b *resumingBody) isClosed() bool { return isClosed(b.closed) }

// Close closes the stream the body reads, and stops any reconnection.
func (b *resumingBody) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if isClosed(b.closed) {
		return nil
	}
	close(b.closed)
	return b.body.Close()
}
