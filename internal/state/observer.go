package state

import (
	"errors"
	"fmt"
	"sync/atomic"
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

// An Observer is told of every operation a Store performs and its
// outcome: err is nil, an expected outcome (ErrNotFound, ErrExists), or a
// failure. It must be safe for concurrent use and return quickly.
type Observer interface {
	Observe(op Op, err error)
}

// A NopObserver ignores everything.
type NopObserver struct{}

// Observe does nothing.
func (NopObserver) Observe(Op, error) {}

// Counts is an Observer that counts operations and failures (errors other
// than ErrNotFound and ErrExists) per Op, for mcpwarden_state_operations_total
// and mcpwarden_state_errors_total. The zero value is ready; it is safe
// for concurrent use.
type Counts struct {
	ops  [numOps]atomic.Uint64
	errs [numOps]atomic.Uint64
}

var _ Observer = (*Counts)(nil)

// Observe counts op, and err if it is a failure.
func (c *Counts) Observe(op Op, err error) {
	if op >= numOps {
		return
	}
	c.ops[op].Add(1)
	if IsFailure(err) {
		c.errs[op].Add(1)
	}
}

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
