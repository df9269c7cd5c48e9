package proxy

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// fullSizeEnv turns on the full-size runs of the reliability tests, too
// slow for CI: MCPWARDEN_FULL_SIZE=1 go test ./proxy -run FullSize -v.
const fullSizeEnv = "MCPWARDEN_FULL_SIZE"

// TestAbandonedSessionsFullSize is TestAbandonedSessionsAreReaped at the
// size of the fault-injection run that found the leak (5,500 sessions),
// measuring the heap they hold and checking it is given back. Not
// parallel: it reads the heap.
func TestAbandonedSessionsFullSize(t *testing.T) {
	if os.Getenv(fullSizeEnv) == "" {
		t.Skip("set " + fullSizeEnv + "=1 for the full-size run")
	}
	const sessions = 5500
	const idle = 3 * time.Second
	e, hs, ts := reapedServer(t, SessionLimits{IdleTimeout: idle, Max: 2 * sessions, MaxPerPrincipal: 2 * sessions}, Identity{})
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	for range sessions {
		if _, err := abandon(t.Context(), ts, ""); err != nil {
			t.Fatal(err)
		}
	}
	held := heap()
	start := time.Now()
	for scrapeMetrics(t, e.tel)[`mcpwarden_sessions_active`] != 0 {
		if time.Since(start) > idle+30*time.Second {
			t.Fatalf("sessions still active %s after the last request", time.Since(start))
		}
		time.Sleep(50 * time.Millisecond)
	}
	ts.CloseClientConnections()
	after := heap()
	live, principals, reserved := hs.ids.counts()
	t.Logf("heap %d KiB before, %d KiB with %d abandoned sessions (%.1f KiB each), %d KiB %s after the last request, once reaped (idle timeout %s); live %d, principals %d, reservations %d",
		before>>10, held>>10, sessions, float64(held-before)/sessions/1024, after>>10, time.Since(start).Round(100*time.Millisecond), idle, live, principals, reserved)
	if after > before+8<<20 {
		t.Errorf("heap %d KiB after reaping, want within 8 MiB of the %d KiB before", after>>10, before>>10)
	}
}
