package state

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// An Op names a Store operation, for metrics (mcpwarden_state_*).
type Op uint8

// The operations.
const (
	OpPutGrant Op = iota
	OpFindGrants
	OpRevokeSession
	OpPublishAsk
	OpPendingAsks
	OpAnswerAsk
	OpWaitAnswer
	OpWithdrawAsk
	OpIssueToken
	OpConsumeToken
	OpSaveSession
	OpLoadSession
	OpTouchSession
	OpEndSession
	numOps
)

var opNames = [...]string{
	OpPutGrant: "put_grant", OpFindGrants: "find_grants", OpRevokeSession: "revoke_session",
	OpPublishAsk: "publish_ask", OpPendingAsks: "pending_asks", OpAnswerAsk: "answer_ask",
	OpWaitAnswer: "wait_answer", OpWithdrawAsk: "withdraw_ask",
	OpIssueToken: "issue_token", OpConsumeToken: "consume_token",
	OpSaveSession: "save_session", OpLoadSession: "load_session",
	OpTouchSession: "touch_session", OpEndSession: "end_session",
}

// String returns the operation's metric label.
func (o Op) String() string {
	if o < numOps {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// An Observer is told of every operation a Store performs, how long it
// took and its outcome: err is nil, an expected outcome (ErrNotFound,
// ErrExists), or a failure. It is also told each time the store's
// subscription to answers comes back after it was lost (a reconnection to
// the shared state). It must be safe for concurrent use and return
// quickly.
type Observer interface {
	Observe(op Op, took time.Duration, err error)
	Resubscribed()
}

// A NopObserver ignores everything.
type NopObserver struct{}

// Observe does nothing.
func (NopObserver) Observe(Op, time.Duration, error) {}

// Resubscribed does nothing.
func (NopObserver) Resubscribed() {}

// Counts is an Observer that counts operations and failures (errors other
// than ErrNotFound and ErrExists) per Op, for mcpwarden_state_operations_total
// and mcpwarden_state_errors_total. The zero value is ready; it is safe
// for concurrent use.
type Counts struct {
	ops    [numOps]atomic.Uint64
	errs   [numOps]atomic.Uint64
	resubs atomic.Uint64
}

var _ Observer = (*Counts)(nil)

// Observe counts op, and err if it is a failure.
func (c *Counts) Observe(op Op, _ time.Duration, err error) {
	if op >= numOps {
		return
	}
	c.ops[op].Add(1)
	if IsFailure(err) {
		c.errs[op].Add(1)
	}
}

// Resubscribed counts one resubscription.
func (c *Counts) Resubscribed() { c.resubs.Add(1) }

// Resubscriptions returns how many times the subscription came back.
func (c *Counts) Resubscriptions() uint64 { return c.resubs.Load() }

// Ops returns how many times op was performed.
func (c *Counts) Ops(op Op) uint64 {
	if op >= numOps {
		return 0
	}
	return c.ops[op].Load()
}

// Errors returns how many times op failed.
func (c *Counts) Errors(op Op) uint64 {
	if op >= numOps {
		return 0
	}
	return c.errs[op].Load()
}

// AllOps returns every operation, for a metrics exporter to range over.
func AllOps() []Op {
	out := make([]Op, numOps)
	for i := range out {
		out[i] = Op(i)
	}
	return out
}

// IsFailure reports whether err is a failure rather than an expected
// outcome (nil, ErrNotFound, ErrExists).
func IsFailure(err error) bool {
	return err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrExists)
}
