package upstream

import (
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
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
		_, _ = pool.Call(t.Context(), "s", mcp.CallToolParams{Name: "crash"})
		evs.wait(t, EventRestarted, 10*time.Second)
	}
	after := openFDs(t)
	t.Logf("open descriptors: %d after the first start, %d after %d restarts", before, after, restarts)
	if after > before+1 {
		t.Errorf("%d restarts left %d more descriptors open", restarts, after-before)
	}
}

func TestChildTerminatedAsThePoolClosesIsNotReportedLost(t *testing.T) {
	t.Parallel()
	spec, dir := faulty(t, "default-signals")
	evs := newEvents()
	pool := Start(t.Context(), map[string]Spec{"s": spec}, &Options{OnEvent: evs.add})
	evs.wait(t, EventConnected, 10*time.Second)
	child := starts(t, dir)[0]
	// A client ending mcpwarden's process tree: the child gets SIGTERM
	// a little before mcpwarden closes the pool.
	if err := syscall.Kill(child, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if err := pool.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if kinds := evs.kinds(); slices.Contains(kinds, EventLost) {
		t.Errorf("events %v: a child terminated at shutdown was reported as lost", kinds)
	}
}

func TestChildTerminatedWhileRunningIsStillReportedLost(t *testing.T) {
	t.Parallel()
	spec, dir := faulty(t, "default-signals")
	pool, evs := startFaulty(t, map[string]Spec{"s": spec})
	evs.wait(t, EventConnected, 10*time.Second)
	if err := syscall.Kill(starts(t, dir)[0], syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	lost := evs.wait(t, EventLost, 5*time.Second)
	if !strings.Contains(lost.Err.Error(), "signal: terminated") {
		t.Errorf("lost: %v, want it killed by SIGTERM", lost.Err)
	}
	evs.wait(t, EventRestarted, 10*time.Second)
	if _, err := pool.Call(t.Context(), "s", mcp.CallToolParams{Name: "tool0"}); err != nil {
		t.Errorf("call after the restart: %v", err)
	}
}
