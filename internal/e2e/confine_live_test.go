package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// TestQuickstartRefusesEtcPasswdLive runs the quickstart's filesystem
// server (the pinned server-filesystem) behind mcpwarden and reads
// /etc/passwd: mcpwarden must refuse it itself, by the workspace, and
// the audit log must say so; before issue 19 only the server refused it.
func TestQuickstartRefusesEtcPasswdLive(t *testing.T) {
	t.Parallel()
	p := newExampleProject(t)
	f := liveExample(t, "quickstart.yaml", "examples/quickstart.yaml", p)
	c := connectStdio(t, f)
	for _, args := range []map[string]any{
		{"path": "/etc/passwd"},
		{"path": "../../../../../../../../etc/passwd"},
	} {
		text, refused := tryTool(t, c, "fs__read_text_file", args)
		if !refused || strings.Contains(text, "root:") {
			t.Errorf("read_text_file %v = %q (refused %v), want a refusal", args, clip(text), refused)
		}
		if !strings.Contains(text, "outside_workspace") {
			t.Errorf("read_text_file %v: the refusal %q does not name the rule outside_workspace", args, clip(text))
		}
	}
	decisions := readAudit(t, f.auditPath, "decision")
	if len(decisions) != 2 {
		t.Fatalf("audit has %d decisions, want 2", len(decisions))
	}
	for _, d := range decisions {
		if d.Decision != "deny" || d.Rule != "outside_workspace" {
			t.Errorf("%s %v was decided %s by %q, want deny by outside_workspace", d.Tool, d.Arguments, d.Decision, d.Rule)
		}
	}
	if results := readAudit(t, f.auditPath, "result"); len(results) != 0 {
		t.Errorf("a refused call reached the server: %d results in the audit", len(results))
	}
}

// TestImportedClaudeCodeConfigConfinesLive imports a Claude Code project
// whose filesystem server is the pinned server-filesystem, serves the
// config import wrote as it is, and reads: a file in the project (allowed
// by the converted permission), and /etc/passwd, which mcpwarden itself
// must not allow, by the workspace import set (outside_workspace: ask, and
// no human here to answer).
func TestImportedClaudeCodeConfigConfinesLive(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	writeFile(t, filepath.Join(project, "README.md"), "a readme\n")
	mcpJSON, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"fs": map[string]any{"type": "stdio", "command": "node", "args": []string{filesystemIndex(), project}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	client := filepath.Join(project, ".mcp.json")
	writeFile(t, client, string(mcpJSON))
	settings := filepath.Join(project, "settings.json")
	writeFile(t, settings, `{"permissions": {"allow": ["mcp__fs__read_text_file"]}}`)
	out := filepath.Join(project, "mcpwarden.yaml")
	cmd := exec.Command(binary, "import", "--from", "claude-code", "--settings", settings, "--command", binary, "--out", out, "--write", client)
	cmd.Dir = project
	report, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("import: %v\n%s", err, report)
	}
	if !strings.Contains(string(report), "file access is confined") {
		t.Errorf("import does not say it confined the servers:\n%s", report)
	}

	// The imported config has an approvals page (ask.approvals: local):
	// on a free port, and an ask no one answers refused in a second.
	imported, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := fmt.Sprintf("  approvals: local\n  approvals_listen: %q\n  timeout: 1s\n", testkit.FreeAddr(t))
	if !strings.Contains(string(imported), "  approvals: local\n") {
		t.Fatalf("the imported config sets no approvals page:\n%s", imported)
	}
	writeFile(t, out, strings.Replace(string(imported), "  approvals: local\n", page, 1))
	f := &fixture{dir: project, sandbox: project, config: out, auditPath: filepath.Join(project, "mcpwarden-audit.jsonl")}
	c := connectStdio(t, f)
	if text, refused := tryTool(t, c, "fs__read_text_file", map[string]any{"path": "README.md"}); refused || text != "a readme\n" {
		t.Errorf("reading README.md in the project = %q (refused %v), want it", clip(text), refused)
	}
	text, refused := tryTool(t, c, "fs__read_text_file", map[string]any{"path": "/etc/passwd"})
	if !refused || strings.Contains(text, "root:") {
		t.Errorf("reading /etc/passwd = %q (refused %v), want a refusal", clip(text), refused)
	}
	var found bool
	for _, d := range readAudit(t, f.auditPath, "decision") {
		if p, _ := d.Arguments["path"].(string); p == "/etc/passwd" {
			found = true
			if d.Decision == "allow" || d.Rule != "outside_workspace" {
				t.Errorf("/etc/passwd was decided %s by %q, want ask or deny by outside_workspace", d.Decision, d.Rule)
			}
		}
	}
	if !found {
		t.Error("the audit log has no decision on /etc/passwd")
	}
}
