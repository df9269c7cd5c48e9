package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/rawjson"
)

// tooLargeCode is the JSON-RPC error code of the response a lineLimiter
// puts in place of a message that is too large; the transports turn such a
// response to a tools/call into ErrResultTooLarge (see tooLargeResponse).
// It is outside the codes mcp-go maps to sentinels, so for other requests
// the message text reaches the caller.
const tooLargeCode = -32070

// tooLargeMarker starts the message of that response.
const tooLargeMarker = "mcpwarden: upstream message exceeds max_result_bytes"

// A lineLimiter passes a stream of newline-delimited messages through,
// cutting every line longer than max bytes. A cut line is ended early (so
// the reader above sees, and drops, an unparseable line), the rest of it is
// skipped without being kept, and when it ends a JSON-RPC error response
// with the cut message's id is put in its place, so the request it answered
// fails at once instead of waiting for its timeout. Memory use is bounded
// by max plus a small buffer, whatever the upstream sends.
//
// In sse mode the lines are Server-Sent Events fields ("data: {…}"): a cut
// line is ended with a blank line (ending the event, whose broken JSON the
// SSE reader drops) and the replacement is sent as a data field of a new
// event, which the stream's own blank line then ends.
//
// With a resultStash, each line is held until it ends, and the result of
// a response the stash expects is put in the stash; the reader above gets
// the response with an empty result in its place, so the result is not
// decoded there (see transport.go). A cut line is then dropped whole.
type lineLimiter struct {
	r       io.Reader
	max     int64
	sse     bool
	results *resultStash
	line    []byte   // the current line, when it is held (its last block; see hold)
	held    [][]byte // the line's earlier blocks

	in   []byte
	out  []byte // filtered bytes not yet read, from off
	off  int
	n    int64 // bytes of the current line so far
	over bool  // the current line was cut
	scan idScanner
	err  error

	// later holds the responses for calls sent past mcp-go's transport
	// that came after lines the reader above has not yet taken: they are
	// handed over once it has read them all (see handDirect).
	later []heldResponse
}

// A heldResponse is a response held for the call that waits for it on to.
type heldResponse struct {
	to  chan<- []byte
	msg []byte
}

func newLineLimiter(r io.Reader, max int64, sse bool, results *resultStash) *lineLimiter {
	return &lineLimiter{r: r, max: max, sse: sse, results: results, in: make([]byte, 32<<10)}
}

func (l *lineLimiter) Read(p []byte) (int, error) {
	for l.off == len(l.out) {
		// The reader has taken every line passed, and handled them: it
		// reads again only once it has no whole line left.
		l.deliverLater()
		if l.err != nil {
			return 0, l.err
		}
		l.out, l.off = reuse(l.out), 0
		n, err := l.r.Read(l.in)
		l.filter(l.in[:n])
		l.err = err
		if err != nil && l.results != nil {
			// The stream has ended: the responses held are handed over
			// now, as the reader may not read again.
			l.deliverLater()
			l.results.end() // no response comes now to the calls waiting in it
		}
	}
	n := copy(p, l.out[l.off:])
	l.off += n
	return n, nil
}

// filter appends what passes of chunk to l.out.
func (l *lineLimiter) filter(chunk []byte) {
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		part := chunk
		if i >= 0 {
			part = chunk[:i]
		}
		l.scan.feed(part)
		if !l.over {
			room := l.max - l.n
			if int64(len(part)) <= room {
				l.pass(part)
				l.n += int64(len(part))
			} else {
				l.pass(part[:room])
				l.over = true
				switch {
				case l.results != nil:
					l.line, l.held = nil, nil // dropped whole
				case l.sse:
					l.out = append(l.out, "\n\n"...)
				default:
					l.out = append(l.out, '\n')
				}
			}
		}
		if i < 0 {
			return
		}
		if l.over {
			if !l.deliverReplacement() {
				l.out = append(l.out, l.replacement()...)
			}
		} else {
			passed := true
			if l.results != nil {
				l.whole()
				passed = l.passHeld()
				l.line = reuse(l.line)
			}
			if passed {
				l.out = append(l.out, '\n')
			}
		}
		l.n, l.over = 0, false
		l.scan.reset()
		chunk = chunk[i+1:]
	}
}

// pass passes part of the current line on, or holds it until the line
// ends.
func (l *lineLimiter) pass(part []byte) {
	if l.results != nil {
		l.hold(part)
	} else {
		l.out = append(l.out, part...)
	}
}

// passHeld appends the held line to l.out as it is passed on: the line
// itself, or, for a response whose result the stash expects, the response
// with an empty result, the result having gone to the stash. The response
// to a call sent past the transport goes to that call instead, and passed
// is false: nothing of it is passed on.
//
// For measured speed (BenchmarkLineLimiterResponses): a result is copied
// into a slice of its own size and the held line's buffer is kept for the
// next message, where handing the buffer to the stash made every response,
// however small, allocate and zero a fresh 32 KiB one. A buffer that
// reuse would let go anyway (over maxReused) is handed over uncopied.
func (l *lineLimiter) passHeld() (passed bool) {
	id, ok := l.scan.responseID()
	// A line too large to reuse is handed over rather than copied.
	handOver := cap(l.line) > maxReused
	// A call sent past mcp-go's transport takes its response whole.
	if ok && l.handDirect(id, l.line, handOver) {
		if handOver {
			l.line = nil // the call has its bytes now
		}
		return false
	}
	if !ok || !l.results.expects(id) {
		l.out = append(l.out, l.line...)
		return true
	}
	_, result := responseParts(l.line)
	if result == nil {
		l.out = append(l.out, l.line...)
		return true
	}
	if !handOver {
		result = bytes.Clone(result)
	}
	if !l.results.put(id, result) {
		l.out = append(l.out, l.line...)
		return true
	}
	if handOver {
		l.line = nil // the stash has its bytes now
	}
	l.out = appendEmptiedResponse(l.out, id)
	return true
}

// holdBlock bounds the blocks a held line is gathered in.
const holdBlock = 4 << 20

// hold adds part to the held line. A long line is gathered in blocks and
// put together once when it ends (see whole), so a line of size s is
// copied once, with at most about 2 s held, where growing one slice by
// append (a quarter at a time for large slices) copied it four times.
func (l *lineLimiter) hold(part []byte) {
	for len(part) > 0 {
		if len(l.line) == cap(l.line) {
			if len(l.line) > 0 {
				l.held = append(l.held, l.line)
			}
			l.line = make([]byte, 0, min(max(2*cap(l.line), 32<<10), holdBlock))
		}
		n := copy(l.line[len(l.line):cap(l.line)], part)
		l.line, part = l.line[:len(l.line)+n], part[n:]
	}
}

// whole puts the held line's blocks together.
func (l *lineLimiter) whole() {
	if len(l.held) == 0 {
		return
	}
	size := len(l.line)
	for _, b := range l.held {
		size += len(b)
	}
	out := make([]byte, 0, size)
	for _, b := range l.held {
		out = append(out, b...)
	}
	l.line, l.held = append(out, l.line...), nil
}

// maxReused bounds the buffers a lineLimiter keeps from one message to
// the next: a larger one, left by a large message, is let go rather than
// held for the life of the session.
const maxReused = 1 << 20

// reuse empties b for the next message.
func reuse(b []byte) []byte {
	if cap(b) > maxReused {
		return nil
	}
	return b[:0]
}

// responseParts is the raw id and result of the JSON-RPC response msg;
// result is nil when it has none (an error response, or msg is not a JSON
// object).
func responseParts(msg []byte) (id, result []byte) {
	failed := false
	err := rawjson.Object(msg, func(key string, v []byte) error {
		switch key {
		case "id":
			id = v
		case "result":
			result = v
		case "error":
			failed = true
		}
		return nil
	})
	if err != nil || failed || asksForInput(result) {
		return id, nil
	}
	return id, result
}

// asksForInput reports whether the raw result is a protocol 2026-07-28
// multi round-trip result (resultType "input_required"): the upstream
// asks the client for input before it answers. mcp-go's client must get
// that result itself, to fulfil its requests and retry the call, so it is
// never taken raw. A result that holds neither the value's text nor an
// escape (which could spell it) is not one, which keeps the walk off most
// results; otherwise the result's members are walked as encoding/json
// (mcp-go's decoder) reads them: the key matched without case, the last
// non-null one counting.
func asksForInput(result []byte) bool {
	if !bytes.Contains(result, []byte(mcp.ResultTypeInputRequired)) && !bytes.Contains(result, []byte(`\u`)) {
		return false
	}
	if !json.Valid(result) {
		return false
	}
	var last []byte
	if rawjson.Object(result, func(key string, v []byte) error {
		if strings.EqualFold(key, "resultType") && !rawjson.IsNull(v) {
			last = v
		}
		return nil
	}) != nil || last == nil {
		return false
	}
	var t mcp.ResultType
	return json.Unmarshal(last, &t) == nil && t == mcp.ResultTypeInputRequired
}

// emptiedResponse is the response with the given id whose result was
// taken raw: the transport decodes it in place of the real one.
func emptiedResponse(id []byte) []byte { return appendEmptiedResponse(nil, id) }

// appendEmptiedResponse appends emptiedResponse(id) to dst; it is written
// out rather than formatted, for measured speed (it runs for every call).
func appendEmptiedResponse(dst, id []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"result":`...)
	dst = append(dst, emptyCallResult...)
	return append(dst, '}')
}

// deliverReplacement hands the replacement of a cut line to the call sent
// past mcp-go's transport that waits for it, if one does.
func (l *lineLimiter) deliverReplacement() bool {
	if l.results == nil || l.sse {
		return false
	}
	id, ok := l.scan.responseID()
	if !ok {
		return false
	}
	msg := strings.TrimSuffix(l.replacement(), "\n")
	return l.handDirect(id, []byte(msg), true)
}

// handDirect hands msg, the whole response with id, to the call sent past
// mcp-go's transport that waits for it, and reports whether one waits.
// When lines passed before it are still to be read, the response is held
// until the reader has taken them (see Read): the notifications a server
// sent before a result — its progress — reach mcpwarden's client before
// the call's result does. msg is the caller's to keep unless handOver is
// set.
func (l *lineLimiter) handDirect(id, msg []byte, handOver bool) bool {
	to, ok := l.results.claim(id)
	if !ok {
		return false
	}
	if !handOver {
		msg = bytes.Clone(msg)
	}
	if l.off == len(l.out) {
		to <- msg // buffered for the one response
	} else {
		l.later = append(l.later, heldResponse{to: to, msg: msg})
	}
	return true
}

// deliverLater hands over the responses held by handDirect, in the order
// they came. A call that has given up since does not read its channel,
// which is buffered for the one response.
func (l *lineLimiter) deliverLater() {
	for i, r := range l.later {
		r.to <- r.msg
		l.later[i] = heldResponse{}
	}
	l.later = l.later[:0]
}

// replacement is the line put in place of a cut one: an error response to
// the request it answered, or nothing when it answered none (a
// notification, a request from the server, or an id that was not found).
func (l *lineLimiter) replacement() string {
	id, ok := l.scan.responseID()
	if !ok {
		return ""
	}
	msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":"%s (%d bytes); it was discarded"}}`, id, tooLargeCode, tooLargeMarker, l.max)
	if l.sse {
		return "event: message\ndata: " + msg + "\n"
	}
	return msg + "\n"
}

// A limitTransport caps the bodies of HTTP responses from a remote
// upstream: an event stream is passed through a lineLimiter in sse mode (a
// stream may carry many messages, so only each one is capped), any other
// body fails with ErrResultTooLarge once it exceeds max.
type limitTransport struct {
	base http.RoundTripper
	max  int64
}

func (t *limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	mt := mediaType(resp.Header.Get("Content-Type"))
	var raw *rawCall
	if mt == "application/json" && resp.StatusCode == http.StatusOK {
		raw = rawCallOf(req.Context())
	}
	switch {
	case mt == "text/event-stream":
		resp.Body = readCloser{newLineLimiter(resp.Body, t.max, true, nil), resp.Body}
	case raw != nil:
		return takeRawHTTPResult(resp, t.max, raw)
	default:
		resp.Body = readCloser{&cappedReader{r: resp.Body, left: t.max, max: t.max}, resp.Body}
	}
	return resp, nil
}

// takeRawHTTPResult reads the JSON response to the tools/call c, puts its
// result in c's destination and gives the transport the response with an
// empty result in its place, so that it decodes only that. A body that is
// not a result for c is passed on as it came.
func takeRawHTTPResult(resp *http.Response, max int64, c *rawCall) (*http.Response, error) {
	body, err := io.ReadAll(&cappedReader{r: resp.Body, left: max, max: max})
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if id, result := responseParts(body); result != nil && string(id) == c.id {
		*c.dst = result
		body = emptiedResponse(id)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Del("Content-Length")
	return resp, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

// A cappedReader fails with ErrResultTooLarge once more than left bytes
// have been read.
type cappedReader struct {
	r    io.Reader
	left int64
	max  int64
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, fmt.Errorf("%w: response body exceeds max_result_bytes (%d bytes)", ErrResultTooLarge, c.max)
	}
	if int64(len(p)) > c.left+1 { // read one byte past the cap to notice it
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return 0, fmt.Errorf("%w: response body exceeds max_result_bytes (%d bytes)", ErrResultTooLarge, c.max)
	}
	return n, err
}
