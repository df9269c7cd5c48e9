package proxy

import (
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/proxy/ask"
	"github.com/mcpwarden/mcpwarden/proxy/naming"
	"github.com/mcpwarden/mcpwarden/rules"

	"github.com/mcpwarden/mcpwarden/internal/textcut"
)

func TestSecretNamedPathKeyIsShownOnTheForm(t *testing.T) {
	t.Parallel()
	token := "sk-" + strings.Repeat("x", 24)
	c := formCallSpec(t, rules.Spec{PathKeys: []string{"path", "keyfile"}}, map[string]any{
		"keyfile": "/etc/ssh/ssh_host_ed25519_key", "api_key": token, "nested": map[string]any{"password": token, "path": "/x/" + token},
	})
	params, _ := (&ask.Asker{}).Form(questionOf(c, ask.Target{}, nil), ask.Target{})
	for _, want := range []string{
		`"keyfile": "/etc/ssh/ssh_host_ed25519_key"`,
		`"api_key": <hidden: token, 27 characters>`,
		`"nested": {"password": <hidden: token, 27 characters>, "path": "/x/` + token + `"}`,
	} {
		if !strings.Contains(params.Message, want) {
			t.Errorf("the form lacks %s:\n%s", want, params.Message)
		}
	}
}

func TestCutEndKeepsTheFileName(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"short", "short"},
		{"/srv/app/notes/" + strings.Repeat("x", 50) + "/run.sh", "…" + strings.Repeat("x", 32) + "/run.sh"},
	}
	for _, tt := range tests {
		if got := textcut.Tail(tt.in, 40); got != tt.want {
			t.Errorf("textcut.Tail(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFormShowsEveryPathNormalised(t *testing.T) {
	t.Parallel()
	p, err := rules.Compile(rules.Spec{Servers: map[string]rules.ServerSpec{"fs": {Root: "/srv/app"}}})
	if err != nil {
		t.Fatal(err)
	}
	c := &call{
		tool: naming.Tool{Canonical: "mcp:fs:read_multiple_files", Server: "fs", Name: "read_multiple_files"}, policy: p, principal: "local",
		verdict: rules.Verdict{Rule: "default", Gate: "policy"},
		args:    map[string]any{"path": "notes/../run.sh", "paths": []any{"/srv/app/a/../../../etc/shadow", "/srv/app/ok.txt"}},
	}
	a := &ask.Asker{}
	params, offered := a.Form(questionOf(c, ask.Target{Earns: true, Paths: []string{"/etc/shadow", "/srv/app/ok.txt", "/srv/app/run.sh"}, Folders: []string{"/etc", "/srv/app"}}, nil), ask.Target{Earns: true, Paths: []string{"/etc/shadow", "/srv/app/ok.txt", "/srv/app/run.sh"}, Folders: []string{"/etc", "/srv/app"}})
	for _, want := range []string{
		"mcpwarden approval:", `"path": "notes/../run.sh"`, `  which is "/srv/app/run.sh"`,
		"Other paths, as mcpwarden decided on them:", "\"/srv/app/a/../../../etc/shadow\"\n  which is \"/etc/shadow\"",
	} {
		if !strings.Contains(params.Message, want) {
			t.Errorf("the form lacks %q:\n%s", want, params.Message)
		}
	}
	if strings.Contains(params.Message, "/srv/app/ok.txt\"\n  which is") {
		t.Errorf("a path already normal is repeated:\n%s", params.Message)
	}
	if got := strings.Join(offered, " "); got != "allow_once allow_session allow_session_folder deny deny_session" {
		t.Errorf("offered %s", got)
	}
}
