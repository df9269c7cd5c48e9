package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// TestOwnFilesAreOffLimits gives the filesystem server mcpwarden's own
// directory and the approvals token's, under a policy that allows every fs
// tool, and tries to reach each of mcpwarden's files: directly, with `..`,
// relative to the server's directory, through symlinks and in a list.
func TestOwnFilesAreOffLimits(t *testing.T) {
	t.Parallel()
	// The servers are granted mcpwarden's state directory itself, which
	// no sandbox starts a server with: this is about the rules'
	// self-protection of an unconfined server.
	f := newFixture(t, "stdio", "  fs:\n    command: node\n    args: [SERVER, DIR, STATE]\n    cwd: DIR\n    sandbox: off\n  nolinks:\n    command: node\n    args: [SERVER, DIR, STATE]\n    resolve_symlinks: false\n    sandbox: off", `  default: allow
  allow: ["mcp:fs:*", "mcp:nolinks:*"]`)
	f.appendConfig(t, fmt.Sprintf("ask:\n  approvals: local\n  approvals_listen: %q\n", testkit.FreeAddr(t)))
	token := tokenPath(t, f)
	state := filepath.Dir(token)
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(f.config)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.NewReplacer(
		"SERVER", fmt.Sprintf("%q", filepath.Join(npmMods, "@modelcontextprotocol", "server-filesystem", "dist", "index.js")),
		"DIR", fmt.Sprintf("%q", f.dir), "STATE", fmt.Sprintf("%q", state)).Replace(string(data))
	if err := os.WriteFile(f.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(f.dir, "mcpwarden.lock")
	if err := os.WriteFile(lock, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for link, to := range map[string]string{"cfglink": f.config, "uplink": f.dir, "statelink": state} {
		if err := os.Symlink(to, filepath.Join(f.sandbox, link)); err != nil {
			t.Fatal(err)
		}
	}
	ok := filepath.Join(f.sandbox, "ok.txt")
	if err := os.WriteFile(ok, []byte("fine"), 0o600); err != nil {
		t.Fatal(err)
	}

	c := connectStdio(t, f, client.WithLegacyProtocolOnly())
	readPageToken(t, f) // the instance is up and its token written
	if res := callTool(t, c, "fs__read_text_file", map[string]any{"path": ok}); res.IsError {
		t.Fatalf("an ordinary file was refused: %s", testkit.Text(res))
	}
	tests := []struct {
		name string
		tool string
		args map[string]any
	}{
		{"reading the config", "read_text_file", map[string]any{"path": f.config}},
		{"rewriting the config", "write_file", map[string]any{"path": f.config, "content": "policy: {default: allow}\n"}},
		{"editing the config", "edit_file", map[string]any{"path": f.config, "edits": []any{map[string]any{"oldText": "deny", "newText": "allow"}}}},
		{"reading the config through ..", "read_text_file", map[string]any{"path": filepath.Join(f.sandbox, "..", "mcpwarden.yaml")}},
		{"reading the config relative to the server", "read_text_file", map[string]any{"path": "mcpwarden.yaml"}},
		{"reading the config through a file link", "read_text_file", map[string]any{"path": filepath.Join(f.sandbox, "cfglink")}},
		{"reading the config through a directory link", "read_text_file", map[string]any{"path": filepath.Join(f.sandbox, "uplink", "mcpwarden.yaml")}},
		{"reading the config among other files", "read_multiple_files", map[string]any{"paths": []any{ok, f.config}}},
		{"reading the audit log", "read_text_file", map[string]any{"path": f.auditPath}},
		{"truncating the audit log", "write_file", map[string]any{"path": f.auditPath, "content": ""}},
		{"writing the audit lock", "write_file", map[string]any{"path": f.auditPath + ".lock", "content": ""}},
		{"writing a rotated audit log", "write_file", map[string]any{"path": filepath.Join(f.dir, "audit-000001.jsonl"), "content": "{}\n"}},
		{"moving the audit log away", "move_file", map[string]any{"source": f.auditPath, "destination": filepath.Join(f.sandbox, "gone.jsonl")}},
		{"writing the pin lock", "write_file", map[string]any{"path": lock, "content": "{}"}},
		{"reading the approvals token", "read_text_file", map[string]any{"path": token}},
		{"reading the approvals token through a link", "read_text_file", map[string]any{"path": filepath.Join(f.sandbox, "statelink", filepath.Base(token))}},
		{"listing the state directory", "list_directory", map[string]any{"path": state}},
		{"moving the directory holding the config", "move_file", map[string]any{"source": f.dir, "destination": filepath.Join(state, "moved")}},
		{"moving the state directory through a link", "move_file", map[string]any{"source": filepath.Join(f.sandbox, "statelink"), "destination": filepath.Join(f.sandbox, "moved")}},
		{"reading the config through a link where resolve_symlinks is off", "nolinks:read_text_file", map[string]any{"path": filepath.Join(f.sandbox, "cfglink")}},
	}
	for _, tt := range tests {
		server, tool, found := strings.Cut(tt.tool, ":")
		if !found {
			server, tool = "fs", tt.tool
		}
		res := callTool(t, c, server+"__"+tool, tt.args)
		if !res.IsError || !strings.Contains(testkit.Text(res), "builtin:self-protection") {
			t.Errorf("%s: %q (isError %v), want refused by builtin:self-protection", tt.name, testkit.Text(res), res.IsError)
		}
	}
	if data, _ := os.ReadFile(f.config); string(data) != cfg {
		t.Error("the config was changed")
	}
	allowed := 0
	for _, e := range decisionEvents(t, f.auditPath) {
		if field(e, "decision") != "deny" {
			allowed++
		} else if field(e, "rule") != "builtin:self-protection" || field(e, "reason") == "" {
			t.Errorf("a refusal without the built-in rule and its reason: %v", e)
		}
	}
	if allowed != 1 {
		t.Errorf("%d calls were allowed, want only the ordinary read", allowed)
	}

	out, _ := exec.CommandContext(t.Context(), binary, "check", "--config", f.config, "mcp:fs:read_text_file", fmt.Sprintf(`{"path": %q}`, f.config)).CombinedOutput()
	if !strings.Contains(string(out), "DENY") || !strings.Contains(string(out), "builtin:self-protection") {
		t.Errorf("check does not show the self-protection:\n%s", out)
	}
}
