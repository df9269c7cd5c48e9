package main

import (
	"os"
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
	{"gemini", ".gemini/settings.json", clientconfig.Gemini},
	{"codex", ".codex/config.toml", clientconfig.Codex},
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

// TestImportedCodexPassesTheVariablesItsServersTook: Codex gives a server
// only the variables its entry names (env and env_vars), not its whole
// environment, so the mcpwarden entry must name every variable the
// imported servers took from Codex's environment, or serve cannot start.
func TestImportedCodexPassesTheVariablesItsServersTook(t *testing.T) {
	t.Parallel()
	dir, path := copySample(t, "codex", ".codex/config.toml")
	out := filepath.Join(dir, "mcpwarden.yaml")
	if code, _, stderr := run(t, "import", "--command", "mcpwarden", "--out", out, "--write", path); code != 0 {
		t.Fatalf("import exited %d: %s", code, stderr)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	codexEnv := map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_x", "LINEAR_API_KEY": "lin_x", "UNRELATED": "x"}
	src, err := clientconfig.Parse(clientconfig.Codex, data)
	if err != nil || len(src.Servers) != 1 {
		t.Fatalf("rewritten Codex config: %v, %+v", err, src)
	}
	// What Codex gives mcpwarden: env as written, env_vars from its own.
	var environ []string
	for k, v := range src.Servers[0].Env {
		if v == "${"+k+"}" {
			v = codexEnv[k]
		}
		environ = append(environ, k+"="+v)
	}
	if _, err := config.Load(out, environ); err != nil {
		t.Errorf("serve would not start with what Codex passes (%q): %v", environ, err)
	}
}
