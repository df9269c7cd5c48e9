package statetest

import (
	"sync"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/state"
)

// Counts is a state.Observer that counts operations and failures (errors
// other than ErrNotFound and ErrExists, see state.IsFailure) per Op, for
// tests that check what a store reports. The zero value is ready; it is
// safe for concurrent use.
type Counts struct {
	mu     sync.Mutex
	ops    map[state.Op]uint64
	errs   map[state.Op]uint64
	resubs uint64
}

var _ state.Observer = (*Counts)(nil)

// Observe counts op, and err if it is a failure.
func (c *Counts) Observe(op state.Op, _ time.Duration, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ops == nil {
		c.ops, c.errs = map[state.Op]uint64{}, map[state.Op]uint64{}
	}
	c.ops[op]++
	if state.IsFailure(err) {
		c.errs[op]++
	}
}

// Resubscribed counts one resubscription.
func (c *Counts) Resubscribed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resubs++
}

// Resubscriptions returns how many times the subscription came back.
func (c *Counts) Resubscriptions() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.resubs
}

// Ops returns how many times op was performed.
func (c *Counts) Ops(op state.Op) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ops[op]
}

// Errors returns how many times op failed.
func (c *Counts) Errors(op state.Op) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.errs[op]
}
