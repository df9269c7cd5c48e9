package upstream

import (
	"os"
	"runtime/debug"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// openFDs counts the test process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("counting open files: %v", err)
	}
	return len(fds)
}

// TestRestartsLeakNoFileDescriptors crashes a stdio server five times and
// checks that each restart leaves no descriptor behind for the garbage
// collector to close. It turns the collector off, so it does not run in
// parallel with the other tests (and its count is not theirs).
func TestRestartsLeakNoFileDescriptors(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	spec, _ := faulty(t, "")
	pool, evs := startFaulty(t, map[string]Spec{"s": spec})
	evs.wait(t, EventConnected, 10*time.Second)
	before := openFDs(t)
	const restarts = 5
	for range restarts {
		_, _ = pool.Call(t.Context(), "s", nil, mcp.CallToolParams{Name: "crash"})
		evs.wait(t, EventRestarted, 10*time.Second)
	}
	after := openFDs(t)
	t.Logf("open descriptors: %d after the first start, %d after %d restarts", before, after, restarts)
	if after > before+1 {
		t.Errorf("%d restarts left %d more descriptors open", restarts, after-before)
	}
}
