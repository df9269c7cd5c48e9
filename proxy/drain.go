package proxy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrShuttingDown is the cause of the context of a request that shutdown
// cancelled, and what a request refused during shutdown is refused with.
var ErrShuttingDown = errors.New("mcpwarden is shutting down")

// Bounds of the end of Drain. Once the grace period is over and the
// requests still in progress are cancelled, they have cancelWait to
// return (the upstream call ends at once; its notifications/cancelled is
// sent off the caller's path), then cancelSettle more for those
// notifications to reach their upstreams before serving stops and the
// upstreams are closed.
const (
	cancelWait   = 5 * time.Second
	cancelSettle = 200 * time.Millisecond
)

// A drain counts the requests in progress, so that shutdown can let them
// finish, and holds their cancel functions, so that it can end those
// still running when the grace period is over; once draining, new
// requests are refused. It is safe for concurrent use.
type drain struct {
	mu       sync.Mutex
	next     uint64
	active   map[uint64]context.CancelCauseFunc
	draining bool
	idle     chan struct{} // closed when draining and active empties
}

// enter registers a request whose context is ctx and returns the context
// to run it with, which shutdown cancels with ErrShuttingDown, and the
// function to call when it is over. ok false means the server is shutting
// down and the request must be refused.
func (d *drain) enter(ctx context.Context) (_ context.Context, leave func(), ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.draining {
		return ctx, func() {}, false
	}
	if d.active == nil {
		d.active = map[uint64]context.CancelCauseFunc{}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	d.next++
	key := d.next
	d.active[key] = cancel
	return ctx, func() { d.leave(key) }, true
}

func (d *drain) leave(key uint64) {
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
// up to cancelWait, and then cancelSettle for the notifications to go out.
// It is safe to call more than once.
func (s *Server) Drain(ctx context.Context) {
	d := &s.drain
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
	s.logger.Info("shutting down: waiting for requests in progress", "requests", n)
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
	s.logger.Warn("shutting down: grace period over, cancelled the requests still in progress", "requests", n)
	timer := time.NewTimer(cancelWait)
	defer timer.Stop()
	select {
	case <-idle:
	case <-timer.C:
		s.logger.Warn("shutting down: requests still in progress after they were cancelled; stopping anyway", "waited", cancelWait)
		return
	}
	time.Sleep(cancelSettle)
}
