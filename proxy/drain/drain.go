// Package drain counts the requests in progress, so that shutdown can let
// them finish, and ends those still running when the grace period is
// over; once draining, new requests are refused.
package drain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// ErrShuttingDown is the cause of the context of a request that shutdown
// cancelled, and what a request refused during shutdown is refused with.
var ErrShuttingDown = errors.New("mcpwarden is shutting down")

// Bounds of the end of Drain. Once the grace period is over and the
// requests still in progress are cancelled, they have CancelWait to
// return (the upstream call ends at once; its notifications/cancelled is
// sent off the caller's path), then cancelSettle more for those
// notifications to reach their upstreams before serving stops and the
// upstreams are closed.
const (
	CancelWait   = 5 * time.Second
	cancelSettle = 200 * time.Millisecond
)

// A Tracker counts the requests in progress, so that shutdown can let
// them finish, and holds their cancel functions, so that it can end those
// still running when the grace period is over; once draining, new
// requests are refused. The zero value is ready; it is safe for
// concurrent use.
type Tracker struct {
	mu       sync.Mutex
	next     uint64
	active   map[uint64]context.CancelCauseFunc
	passes   map[string][]*pass // by passKey: requests that waited, for their handlers
	draining bool
	idle     chan struct{} // closed when draining and active empties
}

// passTTL bounds how long a request that waited before its handler (see
// Tracker.pass) stays in progress for a handler that does not come.
const passTTL = 2 * time.Second

// A pass is the entry of a request that waited before its handler ran,
// kept for the handler to take over.
type pass struct {
	key    uint64
	ctx    context.Context // the waiting request's, which shutdown cancels
	expiry *time.Timer
}

// Enter registers a request whose context is ctx and returns the context
// to run it with, which shutdown cancels with ErrShuttingDown, and the
// function to call when it is over. ok false means the server is shutting
// down and the request must be refused.
func (d *Tracker) Enter(ctx context.Context) (_ context.Context, leave func(), ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.draining {
		return ctx, func() {}, false
	}
	ctx, key := d.registerLocked(ctx)
	return ctx, func() { d.leave(key) }, true
}

// registerLocked adds a request in progress whose context is ctx.
func (d *Tracker) registerLocked(ctx context.Context) (context.Context, uint64) {
	if d.active == nil {
		d.active = map[uint64]context.CancelCauseFunc{}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	d.next++
	d.active[d.next] = cancel
	return ctx, d.next
}

// EnterWaiting registers a request that waits before its handler runs (a
// tools/call waiting for its upstream's first start, see awaitStarting),
// as Enter does. When the wait is over, leave ends it, or handOver keeps it in
// progress for the handler that EnterAs with the same key, which takes it
// over even once shutdown has begun: a request that was in progress when
// it began is drained, not refused. A pass no handler takes within passTTL
// is over.
func (d *Tracker) EnterWaiting(ctx context.Context) (_ context.Context, handOver func(passKey string), leave func(), ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.draining {
		return ctx, nil, nil, false
	}
	ctx, key := d.registerLocked(ctx)
	waiting := ctx
	return ctx, func(passKey string) {
		d.mu.Lock()
		defer d.mu.Unlock()
		if _, ok := d.active[key]; !ok {
			return
		}
		if d.passes == nil {
			d.passes = map[string][]*pass{}
		}
		p := &pass{key: key, ctx: waiting}
		d.passes[passKey] = append(d.passes[passKey], p)
		p.expiry = time.AfterFunc(passTTL, func() {
			if d.takePass(passKey, p) {
				d.leave(key)
			}
		})
	}, func() { d.leave(key) }, true
}

// EnterAs is Enter for a handler whose request may have waited before it
// (see EnterWaiting): it takes over the oldest pass with passKey, if there
// is one, draining or not.
func (d *Tracker) EnterAs(ctx context.Context, passKey string) (_ context.Context, leave func(), ok bool) {
	d.mu.Lock()
	if ps := d.passes[passKey]; len(ps) > 0 {
		p := ps[0]
		d.removePassLocked(passKey, p)
		p.expiry.Stop()
		ctx, cancel := context.WithCancelCause(ctx)
		if cause := context.Cause(p.ctx); errors.Is(cause, ErrShuttingDown) {
			cancel(cause) // the grace period ended while it waited
		}
		d.active[p.key](nil) // the waiting request's context
		d.active[p.key] = cancel
		d.mu.Unlock()
		return ctx, func() { d.leave(p.key) }, true
	}
	d.mu.Unlock()
	return d.Enter(ctx)
}

// takePass removes p if it is still waiting for its handler.
func (d *Tracker) takePass(passKey string, p *pass) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.removePassLocked(passKey, p)
}

func (d *Tracker) removePassLocked(passKey string, p *pass) bool {
	ps := d.passes[passKey]
	for i, q := range ps {
		if q == p {
			if len(ps) == 1 {
				delete(d.passes, passKey)
			} else {
				d.passes[passKey] = append(ps[:i:i], ps[i+1:]...)
			}
			return true
		}
	}
	return false
}

func (d *Tracker) leave(key uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if cancel, ok := d.active[key]; ok {
		cancel(nil) // releases the context; a request over is not cancelled
		delete(d.active, key)
	}
	if d.draining && len(d.active) == 0 && d.idle != nil {
		close(d.idle)
		d.idle = nil
	}
}

// Drain refuses new requests and waits until the requests in progress
// have finished or ctx ends (the grace period), whichever is first. At the
// end of the grace period it cancels the requests still in progress with
// ErrShuttingDown — each upstream is sent notifications/cancelled and each
// client gets "mcpwarden is shutting down" — and waits for them to return,
// up to CancelWait, and then cancelSettle for the notifications to go out.
// It is safe to call more than once.
func (d *Tracker) Drain(ctx context.Context, logger *slog.Logger) {
	d.mu.Lock()
	d.draining = true
	if len(d.active) == 0 {
		d.mu.Unlock()
		return
	}
	if d.idle == nil {
		d.idle = make(chan struct{})
	}
	idle := d.idle
	n := len(d.active)
	d.mu.Unlock()
	logger.Info("shutting down: waiting for requests in progress", "requests", n)
	select {
	case <-idle:
		return
	case <-ctx.Done():
	}
	d.mu.Lock()
	cause := fmt.Errorf("%w: the grace period ended before the request finished, so it was cancelled", ErrShuttingDown)
	n = len(d.active)
	for _, cancel := range d.active {
		cancel(cause)
	}
	d.mu.Unlock()
	logger.Warn("shutting down: grace period over, cancelled the requests still in progress", "requests", n)
	timer := time.NewTimer(CancelWait)
	defer timer.Stop()
	select {
	case <-idle:
	case <-timer.C:
		logger.Warn("shutting down: requests still in progress after they were cancelled; stopping anyway", "waited", CancelWait)
		return
	}
	time.Sleep(cancelSettle)
}

// Active returns how many requests are in progress.
func (d *Tracker) Active() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.active)
}
