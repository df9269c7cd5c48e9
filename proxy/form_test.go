package proxy

import (
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/rules"
)

func TestSecretNamedPathKeyIsShownOnTheForm(t *testing.T) {
	t.Parallel()
	p, err := rules.Compile(rules.Spec{PathKeys: []string{"path", "keyfile"}})
	if err != nil {
		t.Fatal(err)
	}
	var r *audit.Redactor
	a := &asker{secret: r.IsSecretKey}
	got := a.shown(p, map[string]any{"keyfile": "/etc/ssh/ssh_host_ed25519_key", "api_key": "sk-123", "nested": map[string]any{"password": "hunter2", "path": "/x"}})
	if got["keyfile"] != "/etc/ssh/ssh_host_ed25519_key" {
		t.Errorf("a path-like key named like a secret was hidden: %v", got["keyfile"])
	}
	if got["api_key"] != hiddenValue || got["nested"].(map[string]any)["password"] != hiddenValue {
		t.Errorf("secret-like values shown: %v", got)
	}
	if got["nested"].(map[string]any)["path"] != "/x" {
		t.Errorf("a nested path was not shown: %v", got)
	}
}

func TestCutEndKeepsTheFileName(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"short", "short"},
		{"/srv/app/notes/" + strings.Repeat("x", 50) + "/run.sh", "…" + strings.Repeat("x", 32) + "/run.sh"},
	}
	for _, tt := range tests {
		if got := cutEnd(tt.in, 40); got != tt.want {
			t.Errorf("cutEnd(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
