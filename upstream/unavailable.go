package upstream

import (
	"fmt"
	"strings"
	"time"
)

// An UnavailableError says why a server cannot take calls right now. It
// wraps ErrUnavailable and the error of the last attempt.
type UnavailableError struct {
	Server  string
	Attempt int           // the number of the next (or current) attempt
	RetryIn time.Duration // until the next attempt; 0 while one is in progress
	EverUp  bool          // whether the server was up before
	Closed  bool          // the pool is closed
	Removed bool          // Reconcile stopped the server: it was removed, or replaced for a new Spec
	Err     error         // why the last attempt failed or the session ended
}

func (e *UnavailableError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "upstream %q ", e.Server)
	switch {
	case e.Removed:
		b.WriteString("was stopped by a reload")
	case e.Closed:
		b.WriteString("is closed")
	case e.EverUp:
		b.WriteString("is restarting")
	default:
		b.WriteString("is not available")
	}
	if !e.Closed && !e.Removed {
		if e.RetryIn > 0 {
			fmt.Fprintf(&b, " (attempt %d, next try in %s)", e.Attempt, e.RetryIn.Round(100*time.Millisecond))
		} else {
			fmt.Fprintf(&b, " (attempt %d in progress)", e.Attempt)
		}
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

func (e *UnavailableError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrUnavailable}
	}
	return []error{ErrUnavailable, e.Err}
}
