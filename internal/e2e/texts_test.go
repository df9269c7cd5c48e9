package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// TestRefusalShowsFileNameNotAdvice: what the model is told names the tool
// and the rule, shows the decisive path from its end (the file name), and
// gives no advice to widen the policy.
func TestRefusalShowsFileNameNotAdvice(t *testing.T) {
	t.Parallel()
	f := standardFixture(t, "stdio")
	c := connectStdio(t, f, client.WithLegacyProtocolOnly())
	long := filepath.Join(f.sandbox, "protected", strings.Repeat("deeply-nested-", 8), "id_rsa_backup.pem")
	tests := []struct {
		name string
		tool string
		args map[string]any
		want []string
	}{
		{"a deny rule", "fs__write_file", map[string]any{"path": long, "content": "x"},
			[]string{"mcp:fs:write_file", `mcp:fs:write_file:path=` + f.sandbox + `/protected/**`, "id_rsa_backup.pem"}},
		{"the default deny", "fs__create_directory", map[string]any{"path": filepath.Join(f.sandbox, "d")},
			[]string{"mcp:fs:create_directory", "default"}},
	}
	for _, tt := range tests {
		res := callTool(t, c, tt.tool, tt.args)
		text := testkit.Text(res)
		t.Logf("%s: %s", tt.name, text)
		if !res.IsError {
			t.Fatalf("%s: not refused: %s", tt.name, text)
		}
		for _, want := range tt.want {
			if !strings.Contains(text, want) {
				t.Errorf("%s: refusal %q lacks %q", tt.name, text, want)
			}
		}
		for _, advice := range []string{"policy.allow", "To allow", "ask_fallback", "remove or narrow"} {
			if strings.Contains(text, advice) {
				t.Errorf("%s: refusal %q advises widening the policy (%q)", tt.name, text, advice)
			}
		}
		if len(text) > 400 {
			t.Errorf("%s: refusal is %d characters long: %q", tt.name, len(text), text)
		}
	}
}
