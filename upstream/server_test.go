package upstream

import (
	"net/http/httptest"
	"testing"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"
)

// TestSupervisorEndsWithoutThePoolLock stops a server while the pool's
// lock is held: its supervisor must end, and report the removal, without
// waiting for that lock (it holds no pointer to the pool), so a pool
// method that holds the lock while it waits for a supervisor cannot
// deadlock with it.
func TestSupervisorEndsWithoutThePoolLock(t *testing.T) {
	t.Parallel()
	spec, _ := faulty(t, "")
	pool, evs := startFaulty(t, map[string]Spec{"s": spec})
	evs.wait(t, EventConnected, 10*time.Second)
	s, err := pool.server("s")
	if err != nil {
		t.Fatal(err)
	}
	pool.mu.Lock()
	defer pool.mu.Unlock()
	s.retire(retiredRemoved)
	s.cancel()
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the supervisor did not end while the pool's lock was held")
	}
	evs.wait(t, EventRemoved, time.Second)
}

func TestReconcileForgetsRetiredServersOnceEnded(t *testing.T) {
	t.Parallel()
	streamable := httptest.NewServer(mcpserver.NewStreamableHTTPServer(newStandIn(1)))
	t.Cleanup(streamable.Close)
	spec := Spec{Transport: TransportHTTP, URL: streamable.URL + "/mcp"}
	pool := Start(t.Context(), map[string]Spec{"a": spec, "b": spec}, nil)
	t.Cleanup(func() { pool.Close() })
	if _, removed, _ := pool.Reconcile(t.Context(), map[string]Spec{"a": spec}); len(removed) != 1 {
		t.Fatalf("removed %v, want [b]", removed)
	}
	pool.Reconcile(t.Context(), map[string]Spec{"a": spec})
	pool.mu.Lock()
	defer pool.mu.Unlock()
	if len(pool.retiring) != 0 {
		t.Errorf("%d retired servers kept after their supervisors ended", len(pool.retiring))
	}
}
