package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// runValidate runs mcpwarden validate on the config and returns its output.
func runValidate(t *testing.T, config string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "validate", "--config", config).CombinedOutput()
	if err != nil {
		t.Fatalf("validate: %v\n%s", err, out)
	}
	return string(out)
}

// TestValidateFlagsADenyOnPathThatReadMultipleFilesEscapes lints, against
// the real server-filesystem, a policy like the examples had before @path
// (a deny on `path` beside an allow of every read): validate reported 0
// findings while read_multiple_files {"paths": [".env"]} leaked. It must
// name the tools that take their paths under other keys and suggest @path;
// the quickstart as it is now has no such findings.
func TestValidateFlagsADenyOnPathThatReadMultipleFilesEscapes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "stdio", "  fs:\n"+serverFilesystem("SANDBOX"), `  default: ask
  deny:
    - "mcp:*:*:path=**/.env"
  allow:
    - "mcp:fs:read_*"`)
	out := runValidate(t, f.config)
	for _, want := range []string{
		`warning: policy.deny[0]: "mcp:*:*:path=**/.env" conditions on "path", but mcp:fs:read_multiple_files takes "paths"; mcp:fs:move_file takes "destination", "source"`,
		"use @path",
		// The fixture starts server-filesystem on the sandbox without a cwd.
		"warning: servers.fs: has no cwd, so the rules join relative paths to",
		"2 lint findings",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("validate output lacks %q:\n%s", want, out)
		}
	}

	// The quickstart (its everything server dropped) has none of these.
	quick := liveExample(t, "quickstart.yaml", "examples/quickstart.yaml", newExampleProject(t))
	out = runValidate(t, quick.config)
	for _, not := range []string{"use @path", "not in path_keys", "has no cwd"} {
		if strings.Contains(out, not) {
			t.Errorf("validate of the quickstart warns %q:\n%s", not, out)
		}
	}
}
