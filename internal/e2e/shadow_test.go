package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// shadowEvent is the part of a decision event shadow mode writes.
type shadowEvent struct {
	Event     string `json:"event"`
	Tool      string `json:"tool"`
	Decision  string `json:"decision"`
	Rule      string `json:"rule"`
	Shadow    bool   `json:"shadow"`
	GrantedBy string `json:"granted_by"`
	Outcome   string `json:"outcome"`
}

// shadowDecisions returns the decision events of the audit log at path.
func shadowDecisions(t *testing.T, path string) []shadowEvent {
	t.Helper()
	var out []shadowEvent
	for _, e := range auditLines[shadowEvent](t, path) {
		if e.Event == "decision" {
			out = append(out, e)
		}
	}
	return out
}

// TestShadowModeForwardsWhatTheStandardPolicyRefusesAndRecordsIt runs the
// reference servers behind mcpwarden with the standard policy under
// enforce: shadow: a write the policy denies is made, a tool it hides is
// listed and runs, an edit it would ask about is made without asking, each
// decision says what it would have been, and the log verifies.
func TestShadowModeForwardsWhatTheStandardPolicyRefusesAndRecordsIt(t *testing.T) {
	t.Parallel()
	f := standardFixture(t, "stdio")
	f.appendConfig(t, "enforce: shadow\n")
	h := &human{answer: says("deny")}
	c := connectStdio(t, f, client.WithElicitationHandler(h))

	list, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Contains(names, "fs__move_file") {
		t.Errorf("tools/list lacks fs__move_file, which shadow mode would forward: %q", names)
	}
	protected := filepath.Join(f.sandbox, "protected")
	if err := os.Mkdir(protected, 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(protected, "owned.txt")
	if res := callTool(t, c, "fs__write_file", map[string]any{"path": target, "content": "v1"}); res.IsError {
		t.Fatalf("a write the policy denies, in shadow mode: %v", res.Content)
	}
	if res := callTool(t, c, "fs__edit_file", map[string]any{"path": target, "edits": []any{map[string]any{"oldText": "v1", "newText": "v2"}}}); res.IsError {
		t.Fatalf("an edit the policy asks about, in shadow mode: %v", res.Content)
	}
	moved := filepath.Join(f.sandbox, "moved.txt")
	if res := callTool(t, c, "fs__move_file", map[string]any{"source": target, "destination": moved}); res.IsError {
		t.Fatalf("a move the policy hides, in shadow mode: %v", res.Content)
	}
	if b, err := os.ReadFile(moved); err != nil || string(b) != "v2" {
		t.Errorf("the file after write, edit and move = %q, %v; want v2", b, err)
	}
	if n := h.times(); n != 0 {
		t.Errorf("the client was asked %d times, want never", n)
	}
	want := map[string]string{"mcp:fs:write_file": "deny", "mcp:fs:edit_file": "ask", "mcp:fs:move_file": "deny"}
	for _, e := range shadowDecisions(t, f.auditPath) {
		d, ok := want[e.Tool]
		if !ok {
			continue
		}
		delete(want, e.Tool)
		if !e.Shadow || e.Decision != d || e.GrantedBy != "shadow" || e.Outcome != "allowed" || e.Rule == "" {
			t.Errorf("%s: %+v, want a shadowed %s let through, naming its rule", e.Tool, e, d)
		}
	}
	if len(want) > 0 {
		t.Errorf("no decision events for %v", want)
	}
	if out := runCLI(t, "audit", "verify", f.auditPath); !strings.HasPrefix(out, "ok:") {
		t.Errorf("audit verify: %s", out)
	}
	if out := runCLI(t, "audit", "tail", "--decision", "deny", f.auditPath); !strings.Contains(out, "ALLOW (shadow: would deny) mcp:fs:write_file") {
		t.Errorf("audit tail --decision deny:\n%s", out)
	}
}
