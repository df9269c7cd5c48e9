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

// TestValidateFlagsALabelThatMissesTheServersPrompt lints, against the
// real server-everything (which offers prompts and resources), a label
// like session-aware's before security round 3 (attack 8): it named the
// fetch tool, so the server's prompt brought text with no label armed.
// validate names the prompt and resources it misses and suggests
// mcp:<server>:*; server-filesystem, which offers no prompts, is not
// flagged.
func TestValidateFlagsALabelThatMissesTheServersPrompt(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "stdio", "  everything:\n"+serverEverything()+"\n  fs:\n"+serverFilesystem("SANDBOX"), `  allow: ["mcp:*:*"]
labels:
  untrusted_input: ["mcp:everything:echo", "mcp:fs:read_text_file"]
  egress: ["mcp:everything:trigger-sampling-request"]
flow:
  - { after: untrusted_input, then: ask, on: egress }`)
	out := runValidate(t, f.config)
	want := `warning: labels.untrusted_input gives the label to mcp:everything:echo but not to mcp:everything:prompts/get, mcp:everything:resources/read, which bring everything's text too; write "mcp:everything:*"`
	if !strings.Contains(out, want) {
		t.Errorf("validate output lacks %q:\n%s", want, out)
	}
	if strings.Contains(out, "mcp:fs:prompts/get") {
		t.Errorf("validate flags server-filesystem's prompts, which it does not offer:\n%s", out)
	}
}
