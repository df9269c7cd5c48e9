package proxy

import (
	"context"
	"sync"
)

// A drain counts the tool calls in progress, so that shutdown can let
// them finish; once draining, new calls are refused.
type drain struct {
	mu       sync.Mutex
	active   int
	draining bool
	idle     chan struct{} // closed when draining and active reaches 0
}

// enter registers a call; false means the server is shutting down.
func (d *drain) enter() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.draining {
		return false
	}
	d.active++
	return true
}

func (d *drain) leave() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.active--
	if d.draining && d.active == 0 && d.idle != nil {
		close(d.idle)
		d.idle = nil
	}
}

// Drain refuses new tool calls and waits until the calls in progress have
// finished or ctx ends (the grace period), whichever is first. It is safe
// to call more than once.
func (s *Server) Drain(ctx context.Context) {
	d := &s.drain
	d.mu.Lock()
	d.draining = true
	if d.active == 0 {
		d.mu.Unlock()
		return
	}
	if d.idle == nil {
		d.idle = make(chan struct{})
	}
	idle := d.idle
	n := d.active
	d.mu.Unlock()
	s.logger.Info("shutting down: waiting for calls in progress", "calls", n)
	select {
	case <-idle:
	case <-ctx.Done():
		s.logger.Warn("shutting down: grace period over, cancelling the calls still in progress")
	}
}
