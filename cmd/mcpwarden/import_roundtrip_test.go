package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/clientconfig"
	"github.com/mcpwarden/mcpwarden/internal/config"
)

// roundTripSamples are the samples of every client import knows.
var roundTripSamples = []struct {
	sample, file string
	format       clientconfig.Format
}{
	{"claude-desktop", "claude_desktop_config.json", clientconfig.ClaudeDesktop},
	{"claude-code", ".mcp.json", clientconfig.ClaudeCode},
	{"cursor", ".cursor/mcp.json", clientconfig.Cursor},
	{"vscode", ".vscode/mcp.json", clientconfig.VSCode},
	{"opencode", "opencode.json", clientconfig.OpenCode},
}

// TestImportRoundTripRunsTheOfflineCommandsWithoutTheSecrets follows the
// README: import --write into a folder that does not exist yet, then the
// next steps it prints (tools --offline, check, validate --offline) work
// in a shell that has none of the secrets --write moved into the client's
// file (issue 37).
func TestImportRoundTripRunsTheOfflineCommandsWithoutTheSecrets(t *testing.T) {
	t.Parallel()
	for _, tt := range roundTripSamples {
		t.Run(tt.sample, func(t *testing.T) {
			t.Parallel()
			dir, path := copySample(t, tt.sample, tt.file)
			out := filepath.Join(dir, "not", "yet", "mcpwarden.yaml")
			code, _, stderr := run(t, "import", "--from", tt.format.String(), "--command", "mcpwarden", "--out", out, "--write", path)
			if code != 0 {
				t.Fatalf("import exited %d: %s", code, stderr)
			}
			if code, stdout, stderr := run(t, "tools", "--offline", "--config", out); code != 0 {
				t.Errorf("tools --offline exited %d:\n%s%s", code, stdout, stderr)
			}
			if code, stdout, stderr := run(t, "validate", "--offline", "--config", out); code != 0 {
				t.Errorf("validate --offline exited %d:\n%s%s", code, stdout, stderr)
			}
			cfg, err := config.LoadOffline(out, nil)
			if err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := run(t, "check", "--config", out, "mcp:"+cfg.ServerNames()[0]+":some_tool")
			if code != exitAsk { // default: ask
				t.Errorf("check exited %d:\n%s%s", code, stdout, stderr)
			}
			if strings.Contains(stderr, "ghp_R4nd0m") {
				t.Error("a secret reached the output")
			}
		})
	}
}
