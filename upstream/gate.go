package upstream

import (
	"context"
	"sync/atomic"
)

// A gate bounds the calls in flight to one upstream, with a bounded queue.
type gate struct {
	slots      chan struct{}
	waiting    atomic.Int64
	maxWaiting int64
}

func newGate(slots, queue int) *gate {
	return &gate{slots: make(chan struct{}, slots), maxWaiting: int64(queue)}
}

// acquire takes a slot, waiting in the queue if there is room in it; it
// fails with ErrBusy when there is not, or with ctx's error.
func (g *gate) acquire(ctx context.Context) error {
	select {
	case g.slots <- struct{}{}:
		return nil
	default:
	}
	if g.waiting.Add(1) > g.maxWaiting {
		g.waiting.Add(-1)
		return ErrBusy
	}
	defer g.waiting.Add(-1)
	select {
	case g.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gate) release() { <-g.slots }
