package proxy

import (
	"runtime"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/proxy/httpguard"
	"github.com/mcpwarden/mcpwarden/proxy/sessiontable"
)

// BenchmarkAbandonedSessions is TestAbandonedSessionsAreReaped at the size
// of the fault-injection run that found the leak (5,500 sessions), too
// slow for CI: it measures the heap the abandoned sessions hold and checks
// that reaping gives it back. Run it with
// go test ./proxy -run '^$' -bench AbandonedSessions -benchtime 1x.
func BenchmarkAbandonedSessions(b *testing.B) {
	const sessions = 5500
	const idle = 3 * time.Second
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	for b.Loop() {
		e, hs, ts := reapedServer(b, sessiontable.Limits{IdleTimeout: idle, Max: 2 * sessions, MaxPerPrincipal: 2 * sessions}, httpguard.Identity{})
		before := heap()
		for range sessions {
			if _, err := abandon(b.Context(), ts, ""); err != nil {
				b.Fatal(err)
			}
		}
		held := heap()
		start := time.Now()
		for e.active(b) != 0 {
			if time.Since(start) > idle+30*time.Second {
				b.Fatalf("sessions still active %s after the last request", time.Since(start))
			}
			time.Sleep(50 * time.Millisecond)
		}
		reaped := time.Since(start)
		ts.CloseClientConnections()
		after := heap()
		if live, principals, reserved := hs.IDs().Counts(); live+principals+reserved != 0 {
			b.Errorf("after reaping: %d live, %d principals, %d reservations", live, principals, reserved)
		}
		if after > before+8<<20 {
			b.Errorf("heap %d KiB after reaping, want within 8 MiB of the %d KiB before", after>>10, before>>10)
		}
		b.ReportMetric(float64(held-before)/sessions/1024, "heap-KiB/session")
		b.ReportMetric(float64(after>>10), "heap-KiB-after")
		b.ReportMetric(reaped.Seconds(), "s-to-reap")
	}
}
