package state

import (
	"errors"
	"fmt"
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
