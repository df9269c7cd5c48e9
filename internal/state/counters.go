package state

import (
	"context"
	"fmt"
	"time"
)

// Session-aware policy state (docs/design.md, "Shared state"): the
// counters of limits and the labels armed in a session, which replicas
// must share so that a limit counts every replica's requests and a flow
// rule sees what a session received on any replica. Like the rest of
// the package every method fails closed: an error wraps ErrUnavailable
// when the state cannot be reached, and the caller refuses or escalates.

// Counters count events in fixed windows.
type Counters interface {
	// Incr adds one to the counter key and returns its count in the
	// current window. A window starts with the first Incr of a key that
	// has none and lasts window (positive); the next Incr after it ends
	// starts a new one at 1. Concurrent Incrs on any client each get a
	// count of their own.
	Incr(ctx context.Context, key string, window time.Duration) (int64, error)
}

// An ArmedLabel is a label armed in a scope (a session or a principal)
// and the call that armed it.
type ArmedLabel struct {
	Label string `json:"label"`
	// ID is the arming call's id (its audit decision event's id).
	ID string `json:"id"`
	// Tool is the arming call's canonical name.
	Tool string `json:"tool"`
}

// Labels keep the labels armed in each scope.
type Labels interface {
	// ArmLabels arms each of labels in scope, unless it is armed there
	// already (the first arming call is kept), and restarts the time to
	// live (positive) of the scope's labels.
	ArmLabels(ctx context.Context, scope string, labels []ArmedLabel, ttl time.Duration) error
	// ArmedLabels returns the labels armed in scope, in label order; none
	// is an empty result, not an error.
	ArmedLabels(ctx context.Context, scope string) ([]ArmedLabel, error)
	// DisarmLabels drops every label of scope, as the end of its session
	// does; a scope with none is not an error.
	DisarmLabels(ctx context.Context, scope string) error
}

// PolicyState is what session-aware policy keeps: limit counters and
// armed labels.
type PolicyState interface {
	Counters
	Labels
}

// CheckWindow returns an error when window is not positive: every
// counter's window ends.
func CheckWindow(window time.Duration) error {
	if window <= 0 {
		return fmt.Errorf("a counter needs a positive window, not %s", window)
	}
	return nil
}
