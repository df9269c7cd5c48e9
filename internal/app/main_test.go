package app

import (
	"fmt"
	"os"
	"testing"
)

// TestMain gives the tests a state directory of their own, as
// $XDG_STATE_HOME: Start makes the audit signing key there
// (config.AuditKeyPath), and the sandboxed servers' homes go there too
// (config.StateDir, without XDG_RUNTIME_DIR). Otherwise both would land in
// the real ~/.local/state/mcpwarden of whoever runs the tests.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcpwarden-app-state-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "app tests:", err)
		os.Exit(1)
	}
	if err := os.Setenv("XDG_STATE_HOME", dir); err != nil {
		fmt.Fprintln(os.Stderr, "app tests:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
