package testkit

import (
	"testing"
	"time"
)

// maxPoll is the longest Eventually waits between two checks.
const maxPoll = 200 * time.Millisecond

// Eventually checks cond until it holds and fails t, naming what, if it
// still does not hold after within. It checks at once, then after 1 ms,
// doubling the pause up to a twentieth of within (at most 200 ms), so a
// condition that holds soon is seen soon and a slow one is not polled
// hard. Eventually must be called from the test's goroutine (it may call
// t.Fatalf). In a testing/synctest bubble its pauses run on the bubble's
// fake clock.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	pause, longest := time.Millisecond, min(within/20, maxPoll)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(pause)
		pause = max(min(2*pause, longest), time.Millisecond)
	}
}
