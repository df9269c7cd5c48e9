//go:build unix

package upstream

import (
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// The tests below signal a stdio child as a client ending mcpwarden's
// process tree would; signals are Unix's.

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
	if _, err := pool.Call(t.Context(), "s", nil, mcp.CallToolParams{Name: "tool0"}); err != nil {
		t.Errorf("call after the restart: %v", err)
	}
}
