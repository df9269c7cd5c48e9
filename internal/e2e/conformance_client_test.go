package e2e

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestConformanceClientScenariosPassThroughMcpwarden runs the official MCP
// conformance suite's client scenarios other than auth/* (initialize,
// tools_call, elicitation-sep1034-client-defaults, sse-retry on suite
// 0.1.16) with .ci/conformance-client: once with the Go SDK's reference
// client, once with mcpwarden as the client of the scenario's server and
// a real client driving the scenario through `mcpwarden serve`. It
// requires every scenario the reference client passes to pass through
// mcpwarden too: the elicitation scenario's server asks on the standalone
// GET stream, which mcpwarden did not open before. The table is logged.
func TestConformanceClientScenariosPassThroughMcpwarden(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(repoRoot, ".ci", "conformance-client"), binary)
	cmd.Dir = repoRoot
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf(".ci/conformance-client:\n%s", out)
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		t.Errorf("client scenarios that the reference client passes fail through mcpwarden (see the table above)")
	default:
		t.Fatalf(".ci/conformance-client did not run: %v", err)
	}
}
