package upstream

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestFailedFirstStartIsRetriedInTheBackground(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "ready")
	// Fails until the marker exists, then serves like the stand-in.
	spec, _ := faulty(t, "")
	spec.Command = "sh"
	spec.Args = []string{"-c", `test -e "$0" || { echo "not ready yet" >&2; exit 2; }; exec "$1"`, marker, os.Args[0]}
	pool, evs := startFaulty(t, map[string]Spec{"late": spec})
	err := pool.Err("late")
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "not ready yet") || !strings.Contains(err.Error(), "next try in") {
		t.Fatalf("Err = %v", err)
	}
	evs.wait(t, EventFailed, 10*time.Second)
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ev := evs.wait(t, EventConnected, 30*time.Second)
	if len(ev.Tools) != 7 || !ev.ToolsChanged {
		t.Errorf("Connected event: %d tools, ToolsChanged %v", len(ev.Tools), ev.ToolsChanged)
	}
	if tools, err := pool.Tools("late"); err != nil || len(tools) != 7 {
		t.Errorf("Tools = %d, %v", len(tools), err)
	}
}

func TestHangOnInitializeFailsWithinInitTimeout(t *testing.T) {
	t.Parallel()
	hang, _ := faulty(t, "hang-init")
	hang.InitTimeout = 300 * time.Millisecond
	garbage, _ := faulty(t, "garbage")
	start := time.Now()
	pool, _ := startFaulty(t, map[string]Spec{"hang": hang, "garbage": garbage})
	// The bound is far above 300ms so that a loaded machine does not fail
	// it, and below the 30s default that a hang would otherwise wait.
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("Start took %s with an init_timeout of 300ms", d)
	}
	err := pool.Err("hang")
	if err == nil || !strings.Contains(err.Error(), `upstream "hang"`) || !strings.Contains(err.Error(), "init_timeout 300ms") {
		t.Errorf("Err = %v, want an init_timeout error naming the server", err)
	}
	// Garbage on stdout is skipped; the session works.
	if err := pool.Err("garbage"); err != nil {
		t.Errorf("server writing garbage first: %v", err)
	}
	if _, err := pool.Call(t.Context(), "garbage", nil, mcp.CallToolParams{Name: "tool0"}); err != nil {
		t.Errorf("server writing garbage first: call: %v", err)
	}
}
