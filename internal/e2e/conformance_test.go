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
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(repoRoot, ".ci", "conformance"), binary)
	cmd.Dir = repoRoot
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf(".ci/conformance:\n%s", out)
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		t.Errorf("scenarios that pass against the reference server fail through mcpwarden (see the table above)")
	default:
		t.Fatalf(".ci/conformance did not run: %v", err)
	}
}
