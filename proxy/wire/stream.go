package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
)

// StreamPrefix starts the placeholder that takes the place of a streamed
// result's content items in the response mcp-go encodes; a random token
// and a quote end it.
const StreamPrefix = `"mcpwarden.result:`

// StreamTokenLen is the length of rand.Text's tokens.
const StreamTokenLen = 26

// Streaming a large result is the mirror of lifting arguments (see
// lifted): mcp-go encodes each response whole, and a tools/call result's
// content items — which mcpwarden forwards as the upstream's bytes — are
// copied three times on the way (CallToolResult.MarshalJSON encodes a map
// into a buffer and copies it out, and the response encoder compacts that
// again). So the handler returns a result whose one content item is a
// placeholder naming the items by a random token, and the writer of the
// response — the HTTP request's, or the stdio connection's output — writes
// the items, as received, in its place, then gives their bytes back to
// the in-flight budget. Only a placeholder whose token is in the set of
// that request or connection is replaced; any other text is written as it
// is, so an upstream cannot name another call's result.
type streamedResult struct {
	items [][]byte
	hold  *Hold // the result's bytes in the in-flight budget
}

// Release gives back the result's bytes, when no response carried it
// (the client went away first).
func (r *streamedResult) Release() { r.hold.Release() }

// A StreamSet holds the results a writer is to stream, by token.
type StreamSet = TokenSet[*streamedResult]

type streamSetKey struct{}

// WithStreamSet returns ctx carrying s, the set that Streamed puts the
// results of its calls in.
func WithStreamSet(ctx context.Context, s *StreamSet) context.Context {
	return context.WithValue(ctx, streamSetKey{}, s)
}

// Streamed returns the result to hand mcp-go in place of res, whose
// content items are streamed by the writer of ctx, or nil when there is
// no such writer. n bytes of h, the result's, go with the items.
func Streamed(ctx context.Context, res *mcp.CallToolResult, h *Hold, n int64) *mcp.CallToolResult {
	set, _ := ctx.Value(streamSetKey{}).(*StreamSet)
	if set == nil {
		return nil
	}
	items := make([][]byte, 0, len(res.Content))
	for _, c := range res.Content {
		rc, ok := c.(RawContent)
		if !ok {
			return nil
		}
		items = append(items, rc.Raw)
	}
	r := &streamedResult{items: items, hold: h.Split(n)}
	out := *res
	out.Content = []mcp.Content{RawContent{Raw: []byte(StreamPrefix + set.Put(r) + `"`)}}
	return &out
}

// A StreamWriter writes what it is given with each placeholder of its set
// replaced by the content items it names. mcp-go writes each message with
// one Write, so a placeholder is never split across two.
type StreamWriter struct {
	w   io.Writer
	set *StreamSet
}

// NewStreamWriter returns a writer to w that streams the results of set.
func NewStreamWriter(w io.Writer, set *StreamSet) StreamWriter { return StreamWriter{w: w, set: set} }

func (sw StreamWriter) Write(p []byte) (int, error) {
	n := len(p)
	for {
		i := bytes.Index(p, []byte(StreamPrefix))
		if i < 0 {
			break
		}
		var r *streamedResult
		end := i + len(StreamPrefix) + StreamTokenLen + 1
		if end <= len(p) && p[end-1] == '"' {
			r = sw.set.Take(string(p[i+len(StreamPrefix) : end-1]))
		}
		if r == nil { // not a placeholder of this set: text like any other
			if _, err := sw.w.Write(p[:i+1]); err != nil {
				return 0, err
			}
			p = p[i+1:]
			continue
		}
		err := sw.writeItems(p[:i], r.items)
		r.hold.Release()
		if err != nil {
			return 0, err
		}
		p = p[end:]
	}
	if _, err := sw.w.Write(p); err != nil {
		return 0, err
	}
	return n, nil
}

// writeItems writes head, then the items separated by commas.
func (sw StreamWriter) writeItems(head []byte, items [][]byte) error {
	if _, err := sw.w.Write(head); err != nil {
		return err
	}
	for i, item := range items {
		if i > 0 {
			if _, err := sw.w.Write([]byte{','}); err != nil {
				return err
			}
		}
		if _, err := sw.w.Write(item); err != nil {
			return err
		}
	}
	return nil
}

// A streamResponseWriter is an HTTP response writer that streams results
// (see streamWriter); it flushes and unwraps as the writer it wraps.
type streamResponseWriter struct {
	http.ResponseWriter
	sw StreamWriter
}

func (w *streamResponseWriter) Write(p []byte) (int, error) { return w.sw.Write(p) }

func (w *streamResponseWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *streamResponseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// A RawContent is a content item forwarded as the upstream encoded it.
// mcp.Content's only method is unexported, so the item embeds a
// TextContent to be one; encoding it gives the upstream's bytes, and
// nothing else of it is used.
type RawContent struct {
	mcp.TextContent
	Raw json.RawMessage
}

func (c RawContent) MarshalJSON() ([]byte, error) { return c.Raw, nil }
