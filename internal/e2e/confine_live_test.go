package e2e

import (
	"strings"
	"testing"
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
