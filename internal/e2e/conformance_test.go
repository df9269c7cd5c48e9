package e2e

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestConformanceThroughProxyMatchesDirect runs the official MCP
// conformance suite with .ci/conformance against the Go SDK's reference
// server, directly and through mcpwarden, and requires every scenario that
// passes directly to pass through mcpwarden too. The script prints the
// table and both scores; they are logged here.
func TestConformanceThroughProxyMatchesDirect(t *testing.T) {
	t.Parallel()
	runConformanceScript(t, "conformance", 3*time.Minute, "scenarios that pass against the reference server fail through mcpwarden (see the table above)")
}

// runConformanceScript runs .ci/<script> against the built mcpwarden
// within timeout and logs its table. Exit status 1 is the script's
// verdict, a scenario that passes without mcpwarden failing through it
// (failed, said so); any other failure means it did not run.
func runConformanceScript(t *testing.T, script string, timeout time.Duration, failed string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(repoRoot, ".ci", script), binary)
	cmd.Dir = repoRoot
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf(".ci/%s:\n%s", script, out)
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		t.Error(failed)
	default:
		t.Fatalf(".ci/%s did not run: %v", script, err)
	}
}
