// Package wire is mcpwarden's byte plumbing between the client and the
// handlers: the in-flight budget (Budget, Hold) that bounds the bytes calls
// hold, lifting the large arguments of a tools/call out of its message
// before mcp-go decodes it (Lifted, StdinLifter), streaming a large
// result's content items into the response as the upstream sent them
// (Streamed, StreamWriter), and the token sets both go by. It knows
// nothing of policy: proxy and its transports use it.
package wire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"sync"
)

// DefaultMaxInflightBytes is the bound on the bytes held by tools/calls in
// flight when proxy.Options.MaxInflightBytes is 0 (config max_inflight_mb: 256).
const DefaultMaxInflightBytes = 256 << 20

// ErrInflightFull is wrapped by the error of a call whose arguments or
// result would take the bytes held by calls in flight over the bound.
var ErrInflightFull = errors.New("max_inflight_mb exceeded")

// A Budget bounds the bytes that tools/calls in flight hold: each
// call's arguments (their JSON, as received) from the moment it is handled,
// and its result (its JSON, as the upstream sent it) from the moment it
// arrives, both until the call's handler returns. A call that would go over
// the bound is refused instead of being held: before it is decided when
// its arguments do not fit, or with its result dropped when the result
// does not. What the bound counts is the wire size; the process holds a
// few copies of each on the way through (decoding, checking, encoding), so
// the memory it takes is a small multiple of the bound (see README,
// Reliability). It is safe for concurrent use.
type Budget struct {
	max   int64
	parse chan struct{} // see Parsing

	mu   sync.Mutex
	used int64
}

// NewBudget returns a budget of max bytes, DefaultMaxInflightBytes when
// max is 0.
func NewBudget(max int64) *Budget {
	if max == 0 {
		max = DefaultMaxInflightBytes
	}
	return &Budget{max: max, parse: make(chan struct{}, runtime.GOMAXPROCS(0))}
}

// Parsing waits until fewer large arguments than there are CPUs are being
// parsed, and returns what to call when this parse is done. Parsing takes
// a few times the arguments' size for a moment (the decoder's buffer, the
// decoded strings, the canonical encoding), and more parses at once than
// there are CPUs to run them only hold more of that at once. The wait is
// short and bounded: a parse cannot block.
func (b *Budget) Parsing() (done func()) {
	b.parse <- struct{}{}
	return func() { <-b.parse }
}

// A Hold is what one call has taken from the budget. Its methods may be
// called on a nil hold (a call that took nothing yet), and release is
// idempotent.
type Hold struct {
	b *Budget
	n int64
}

// Admit takes n bytes, which what names in the error, for a new call or
// request, or returns an error naming the setting when they do not fit.
func (b *Budget) Admit(n int64, what string) (*Hold, error) {
	h := &Hold{b: b}
	if err := h.Add(n, what); err != nil {
		return nil, err
	}
	return h, nil
}

// Add takes n more bytes for the call; what names them in the error.
func (h *Hold) Add(n int64, what string) error {
	if h == nil || n <= 0 {
		return nil
	}
	b := h.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.max {
		return fmt.Errorf("%w: %s (%d bytes) would take the bytes held by calls in flight (%d now) over the bound of %s; retry when fewer calls are running, or raise max_inflight_mb", ErrInflightFull, what, n, b.used, sizeText(b.max))
	}
	b.used += n
	h.n += n
	return nil
}

// Split moves n of the bytes h holds (all of them, if it holds fewer)
// to a hold of their own, which is returned.
func (h *Hold) Split(n int64) *Hold {
	if h == nil {
		return nil
	}
	b := h.b
	b.mu.Lock()
	defer b.mu.Unlock()
	n = min(n, h.n)
	h.n -= n
	return &Hold{b: b, n: n}
}

// Release gives back everything the call took.
func (h *Hold) Release() {
	if h == nil {
		return
	}
	b := h.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= h.n
	h.n = 0
}

// bodyCounted marks the context of an HTTP request whose body, and so the
// arguments of the call in it, CountBodies took already.
type bodyCounted struct{}

// AdmitCall takes n bytes of arguments for a tools/call, unless they came
// in an HTTP request body that CountBodies took already; the hold it
// returns takes the call's result either way.
func (b *Budget) AdmitCall(ctx context.Context, n int64) (*Hold, error) {
	if ctx.Value(bodyCounted{}) != nil {
		return &Hold{b: b}, nil
	}
	return b.Admit(n, "its arguments")
}

// CountBodies takes the body of each HTTP request (its ContentLength; the
// guard before it has read the body and set it) from the budget until next
// returns, so that a body which does not fit is refused with 503 before
// mcp-go decodes it. The large arguments of a tools/call are lifted out of
// the body before mcp-go reads it (see Lifted): the handler takes them from
// the body, so mcp-go makes no copies of them.
func (b *Budget) CountBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength <= 0 {
			next.ServeHTTP(w, r)
			return
		}
		h, err := b.Admit(r.ContentLength, "the request body")
		if err != nil {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "mcpwarden refused the request: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		defer h.Release()
		results := &StreamSet{}
		defer results.ReleaseAll()
		w = &streamResponseWriter{ResponseWriter: w, sw: StreamWriter{w: w, set: results}}
		ctx := WithStreamSet(context.WithValue(r.Context(), bodyCounted{}, true), results)
		body, ok := r.Body.(*Body)
		if !ok || len(body.b) < LiftMin {
			next.ServeHTTP(w, r.WithContext(ctx))
			return
		}
		start, end, _, ok := liftSpan(body.b)
		if !ok {
			next.ServeHTTP(w, r.WithContext(ctx))
			return
		}
		set := &LiftedSet{}
		defer set.ReleaseAll()
		rest := lift(body.b, start, end, liftPlaceholder(set.Put(&Lifted{Raw: body.b[start:end:end]})))
		r = r.WithContext(withLiftedSet(ctx, set))
		r.Body, r.ContentLength = NewBody(rest), int64(len(rest))
		next.ServeHTTP(w, r)
	})
}

// InUse returns the bytes held now.
func (b *Budget) InUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// sizeText is n as MiB when it is a whole number of them, else as bytes.
func sizeText(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// A Body is a request body the HTTP guard has read whole; the handlers
// after it reach its bytes without reading (and copying) them.
type Body struct {
	*bytes.Reader
	b []byte
}

// NewBody returns a body of the bytes b.
func NewBody(b []byte) *Body { return &Body{Reader: bytes.NewReader(b), b: b} }

func (*Body) Close() error { return nil }

// Bytes returns the body's bytes, which the caller must not change.
func (b *Body) Bytes() []byte { return b.b }
