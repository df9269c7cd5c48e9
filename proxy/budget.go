package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"sync"
)

// DefaultMaxInflightBytes is the bound on the bytes held by tools/calls in
// flight when Options.MaxInflightBytes is 0 (config max_inflight_mb: 256).
const DefaultMaxInflightBytes = 256 << 20

// ErrInflightFull is wrapped by the error of a call whose arguments or
// result would take the bytes held by calls in flight over the bound.
var ErrInflightFull = errors.New("max_inflight_mb exceeded")

// An inflightBudget bounds the bytes that tools/calls in flight hold: each
// call's arguments (their JSON, as received) from the moment it is handled,
// and its result (its JSON, as the upstream sent it) from the moment it
// arrives, both until the call's handler returns. A call that would go over
// the bound is refused instead of being held: before it is decided when
// its arguments do not fit, or with its result dropped when the result
// does not. What the bound counts is the wire size; the process holds a
// few copies of each on the way through (decoding, checking, encoding), so
// the memory it takes is a small multiple of the bound (see README,
// Reliability). It is safe for concurrent use.
type inflightBudget struct {
	max   int64
	parse chan struct{} // see parsing

	mu   sync.Mutex
	used int64
}

func newInflightBudget(max int64) *inflightBudget {
	if max == 0 {
		max = DefaultMaxInflightBytes
	}
	return &inflightBudget{max: max, parse: make(chan struct{}, runtime.GOMAXPROCS(0))}
}

// parsing waits until fewer large arguments than there are CPUs are being
// parsed, and returns what to call when this parse is done. Parsing takes
// a few times the arguments' size for a moment (the decoder's buffer, the
// decoded strings, the canonical encoding), and more parses at once than
// there are CPUs to run them only hold more of that at once. The wait is
// short and bounded: a parse cannot block.
func (b *inflightBudget) parsing() (done func()) {
	b.parse <- struct{}{}
	return func() { <-b.parse }
}

// A hold is what one call has taken from the budget. Its methods may be
// called on a nil hold (a call that took nothing yet), and release is
// idempotent.
type hold struct {
	b *inflightBudget
	n int64
}

// admit takes n bytes, which what names in the error, for a new call or
// request, or returns an error naming the setting when they do not fit.
func (b *inflightBudget) admit(n int64, what string) (*hold, error) {
	h := &hold{b: b}
	if err := h.add(n, what); err != nil {
		return nil, err
	}
	return h, nil
}

// add takes n more bytes for the call; what names them in the error.
func (h *hold) add(n int64, what string) error {
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

// split moves n of the bytes h holds (all of them, if it holds fewer)
// to a hold of their own, which is returned.
func (h *hold) split(n int64) *hold {
	if h == nil {
		return nil
	}
	b := h.b
	b.mu.Lock()
	defer b.mu.Unlock()
	n = min(n, h.n)
	h.n -= n
	return &hold{b: b, n: n}
}

// release gives back everything the call took.
func (h *hold) release() {
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
// arguments of the call in it, countBodies took already.
type bodyCounted struct{}

// admitCall takes n bytes of arguments for a tools/call, unless they came
// in an HTTP request body that countBodies took already; the hold it
// returns takes the call's result either way.
func (b *inflightBudget) admitCall(ctx context.Context, n int64) (*hold, error) {
	if ctx.Value(bodyCounted{}) != nil {
		return &hold{b: b}, nil
	}
	return b.admit(n, "its arguments")
}

// countBodies takes the body of each HTTP request (its ContentLength; the
// guard before it has read the body and set it) from the budget until next
// returns, so that a body which does not fit is refused with 503 before
// mcp-go decodes it. The large arguments of a tools/call are lifted out of
// the body before mcp-go reads it (see lifted): the handler takes them from
// the body, so mcp-go makes no copies of them.
func (b *inflightBudget) countBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength <= 0 {
			next.ServeHTTP(w, r)
			return
		}
		h, err := b.admit(r.ContentLength, "the request body")
		if err != nil {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "mcpwarden refused the request: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		defer h.release()
		results := &streamSet{}
		defer results.releaseAll()
		w = &streamResponseWriter{ResponseWriter: w, sw: streamWriter{w: w, set: results}}
		ctx := withStreamSet(context.WithValue(r.Context(), bodyCounted{}, true), results)
		body, ok := r.Body.(*bufferedBody)
		if !ok || len(body.b) < liftMin {
			next.ServeHTTP(w, r.WithContext(ctx))
			return
		}
		start, end, _, ok := liftSpan(body.b)
		if !ok {
			next.ServeHTTP(w, r.WithContext(ctx))
			return
		}
		set := &liftedSet{}
		defer set.releaseAll()
		rest := lift(body.b, start, end, liftPlaceholder(set.put(&lifted{raw: body.b[start:end:end]})))
		r = r.WithContext(withLiftedSet(ctx, set))
		r.Body, r.ContentLength = newBufferedBody(rest), int64(len(rest))
		next.ServeHTTP(w, r)
	})
}

// inUse returns the bytes held now.
func (b *inflightBudget) inUse() int64 {
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
