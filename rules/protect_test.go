package rules

import (
	"strings"
	"testing"
)

func TestOwnFilesAreDeniedWhateverThePolicySays(t *testing.T) {
	t.Parallel()
	p, err := Compile(Spec{
		Global: PolicySpec{Default: "allow", Allow: []string{"mcp:*:*", "mcp:fs:read_file:path=/etc/mcpwarden/**"}},
		Servers: map[string]ServerSpec{
			"fs":     {Root: "/srv/app", Local: true},
			"remote": {Root: "/srv/app"},
		},
		Protected: []string{"/etc/mcpwarden/mcpwarden.yaml", "/var/log/mcpwarden/audit.jsonl", "/var/log/mcpwarden/audit-*", "/home/u/.local/state/mcpwarden"},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		server string
		args   map[string]any
		want   Decision
	}{
		{"the config file", "fs", map[string]any{"path": "/etc/mcpwarden/mcpwarden.yaml"}, Deny},
		{"the config file through ..", "fs", map[string]any{"path": "/srv/app/../../etc/mcpwarden/mcpwarden.yaml"}, Deny},
		{"the config file relative to the root", "fs", map[string]any{"path": "../../etc/mcpwarden/mcpwarden.yaml"}, Deny},
		{"the config file in an array", "fs", map[string]any{"paths": []any{"/srv/app/x", "/etc/mcpwarden/mcpwarden.yaml"}}, Deny},
		{"the config file nested", "fs", map[string]any{"edit": map[string]any{"path": "/etc/mcpwarden/mcpwarden.yaml"}}, Deny},
		{"the audit log", "fs", map[string]any{"path": "/var/log/mcpwarden/audit.jsonl"}, Deny},
		{"a rotated audit log", "fs", map[string]any{"path": "/var/log/mcpwarden/audit-000003.jsonl"}, Deny},
		{"a file in the state directory", "fs", map[string]any{"path": "/home/u/.local/state/mcpwarden/approvals.token"}, Deny},
		{"the state directory itself", "fs", map[string]any{"path": "/home/u/.local/state/mcpwarden"}, Deny},
		{"the state directory under ~", "fs", map[string]any{"path": "~/.local/state/mcpwarden/approvals.token"}, Deny},
		{"the state directory under ~user", "fs", map[string]any{"path": "~u/.local/state/mcpwarden"}, Deny},
		{"the config as a file URI", "fs", map[string]any{"path": "file:///etc/mcpwarden/mcpwarden.yaml"}, Deny},
		{"the config as an upper-case file URI", "fs", map[string]any{"path": "FILE:///etc/mcpwarden/mcpwarden.yaml"}, Deny},
		{"the config as a file URI with a host", "fs", map[string]any{"path": "file://localhost/etc/mcpwarden/mcpwarden.yaml"}, Deny},
		{"the config as a file URI with one slash", "fs", map[string]any{"path": "file:/etc/mcpwarden/mcpwarden.yaml"}, Deny},
		{"the config as an encoded file URI", "fs", map[string]any{"path": "file:///etc/mcpwarden/mcpwarden%2Eyaml"}, Deny},
		{"moving the directory that holds the config", "fs", map[string]any{"source": "/etc/mcpwarden", "destination": "/srv/app/x"}, Deny},
		{"moving a directory above the config", "fs", map[string]any{"source": "/etc", "destination": "/srv/app/x"}, Deny},
		{"moving the directory that holds the rotations", "fs", map[string]any{"source": "/var/log/mcpwarden", "destination": "/srv/app/x"}, Deny},
		{"listing a directory above the config", "fs", map[string]any{"path": "/etc"}, Allow},
		{"moving an ordinary directory", "fs", map[string]any{"source": "/srv/app/a", "destination": "/srv/app/b"}, Allow},
		{"a neighbour of the audit log", "fs", map[string]any{"path": "/var/log/mcpwarden/other.log"}, Allow},
		{"a file named like the state directory elsewhere", "fs", map[string]any{"path": "/srv/app/mcpwardenx"}, Allow},
		{"an ordinary file", "fs", map[string]any{"path": "/srv/app/notes.txt"}, Allow},
		{"a remote server's own paths", "remote", map[string]any{"path": "/etc/mcpwarden/mcpwarden.yaml"}, Allow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := p.Decide(Call{Server: tt.server, Tool: "read_file", Arguments: tt.args})
			if v.Decision != tt.want {
				t.Fatalf("decision = %v (%s: %s), want %v", v.Decision, v.Rule, v.Reason, tt.want)
			}
			if tt.want == Deny && v.Rule != RuleSelfProtection {
				t.Errorf("rule = %q, want %q", v.Rule, RuleSelfProtection)
			}
		})
	}
	if ex := p.Explain(Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": "/etc/mcpwarden/mcpwarden.yaml"}}); len(ex.Steps) == 0 || ex.Steps[0].Rule != RuleSelfProtection {
		t.Errorf("Explain steps = %+v, want the self-protection step (check shows it)", ex.Steps)
	}
}

func TestRelativeProtectedPathIsAnError(t *testing.T) {
	t.Parallel()
	if _, err := Compile(Spec{Protected: []string{"mcpwarden.yaml"}}); err == nil {
		t.Error("a relative protected path compiled")
	}
}

func TestReasonKeepsTheEndOfLongValues(t *testing.T) {
	t.Parallel()
	p, err := Compile(Spec{Global: PolicySpec{Deny: []string{"mcp:fs:read_file:path=/srv/**"}}})
	if err != nil {
		t.Fatal(err)
	}
	long := "/srv/" + strings.Repeat("nested/", 20) + "id_rsa"
	v := p.Decide(Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": long}})
	if !strings.Contains(v.Reason, "nested/id_rsa\"") || strings.Contains(v.Reason, long) {
		t.Errorf("reason %q: want the value cut from its front, keeping the file name", v.Reason)
	}
}

// FuzzSelfProtection checks that no spelling of a path whose normalised
// form is at or under a protected path gets past the built-in rule, under
// a policy that allows everything.
func FuzzSelfProtection(f *testing.F) {
	for _, s := range []string{
		"/etc/mcpwarden/mcpwarden.yaml", "../../etc/mcpwarden/x", "~/.local/state/mcpwarden",
		"file:///etc/mcpwarden/mcpwarden.yaml", "/srv/app/./../../etc//mcpwarden/", "mcpwarden.yaml", "/srv/app/ok",
		"/proc/self/cwd/mcpwarden.yaml", "/dev/fd/../cwd/x", "/proc/thread-self/root/etc/mcpwarden", "/proc/self/fd/3/../x",
		"/proc/12/task/12/cwd/.mcp.json", "file:///proc/self/cwd/.claude/settings.json", "/dev/stdin", ".claude",
	} {
		f.Add(s)
	}
	spec := Spec{
		Global:         PolicySpec{Default: "allow", Allow: []string{"mcp:*:*"}},
		Servers:        map[string]ServerSpec{"fs": {Root: "/srv/app", Local: true}},
		Protected:      []string{"/etc/mcpwarden", "/home/u/.local/state/mcpwarden", "/var/log/audit-*"},
		ProtectedNames: []string{".mcp.json", ".claude/settings.json"},
	}
	p, err := Compile(spec)
	if err != nil {
		f.Fatal(err)
	}
	spec.Global = PolicySpec{Allow: []string{"mcp:*:*:@path=/**"}}
	anyPath, err := Compile(spec)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, args := range []map[string]any{{"path": s}, {"paths": []any{"/srv/app/ok", s}}, {"nested": map[string]any{"file": s}}} {
			v := p.Decide(Call{Server: "fs", Tool: "t", Arguments: args})
			env := pathEnv{root: "/srv/app"}
			env.forms(s, func(form string, known bool) bool {
				if _, hit := p.own.at(form); known && hit && v.Rule != RuleSelfProtection {
					t.Fatalf("%q (form %q) reaches a protected path but was decided %v by %q", s, form, v.Decision, v.Rule)
				}
				return false
			})
			if v.Decision != Deny && v.Decision != Allow {
				t.Fatalf("%q: decision %v", s, v.Decision)
			}
			// A reading in the server's view has no known place: no allow
			// on paths may match it.
			env.plainReadings(s, func(raw string, known bool) bool {
				if a := anyPath.Decide(Call{Server: "fs", Tool: "t", Arguments: args}); known && isView(raw) && a.Decision == Allow {
					t.Fatalf("%q (reading %q) is in the server's view but was allowed by %q", s, raw, a.Rule)
				}
				return false
			})
		}
	})
}

func BenchmarkDecideWithSelfProtection(b *testing.B) {
	for _, local := range []bool{false, true} {
		b.Run(map[bool]string{false: "remote", true: "local"}[local], func(b *testing.B) {
			p, err := Compile(Spec{
				Global:         PolicySpec{Allow: []string{"mcp:fs:read_file:path=/srv/app/**"}},
				Servers:        map[string]ServerSpec{"fs": {Root: "/srv/app", Local: local}},
				Protected:      []string{"/etc/mcpwarden/mcpwarden.yaml", "/var/log/mcpwarden/audit.jsonl", "/var/log/mcpwarden/audit.jsonl.lock", "/var/log/mcpwarden/audit-*", "/home/u/.local/state/mcpwarden"},
				ProtectedNames: []string{".mcp.json", ".claude/settings.json", ".claude/settings.local.json", ".cursor/mcp.json", ".vscode/mcp.json", ".vscode/settings.json", "opencode.json", "opencode.jsonc", "claude_desktop_config.json", ".gemini/settings.json", ".codex/config.toml"},
			})
			if err != nil {
				b.Fatal(err)
			}
			c := Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": "/srv/app/notes/today.md"}}
			b.ReportAllocs()
			for b.Loop() {
				if v := p.Decide(c); v.Decision != Allow {
					b.Fatal(v)
				}
			}
		})
	}
}

func TestClientConfigNamesAreProtectedAnywhere(t *testing.T) {
	t.Parallel()
	p, err := Compile(Spec{
		Global:         PolicySpec{Default: "allow", Allow: []string{"mcp:*:*"}},
		Servers:        map[string]ServerSpec{"fs": {Root: "/srv/app", Local: true}, "remote": {Root: "/srv/app"}},
		ProtectedNames: []string{".mcp.json", ".claude/settings.json", ".claude/settings.local.json", "opencode.json"},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		server string
		args   map[string]any
		want   Decision
	}{
		{"a project's .mcp.json", "fs", map[string]any{"path": "/home/u/proj/.mcp.json"}, Deny},
		{".mcp.json relative to the root", "fs", map[string]any{"path": ".mcp.json"}, Deny},
		{".mcp.json through ..", "fs", map[string]any{"path": "/srv/app/sub/../.mcp.json"}, Deny},
		{"Claude Code's settings", "fs", map[string]any{"path": "/srv/app/.claude/settings.json"}, Deny},
		{"Claude Code's local settings", "fs", map[string]any{"path": ".claude/settings.local.json"}, Deny},
		{"Claude Code's settings under ~", "fs", map[string]any{"path": "~/.claude/settings.json"}, Deny},
		{"OpenCode's config as a file URI", "fs", map[string]any{"path": "file:///srv/app/opencode.json"}, Deny},
		{"moving .claude away", "fs", map[string]any{"source": "/srv/app/.claude", "destination": "/srv/app/x"}, Deny},
		{"moving a directory onto .claude", "fs", map[string]any{"source": "/srv/app/x", "destination": "/srv/app/.claude"}, Deny},
		{"another file in .claude", "fs", map[string]any{"path": "/srv/app/.claude/commands/x.md"}, Allow},
		{"a name that only ends like it", "fs", map[string]any{"path": "/srv/app/x.mcp.json"}, Allow},
		{"settings.json elsewhere", "fs", map[string]any{"path": "/srv/app/settings.json"}, Allow},
		{"a remote server's paths", "remote", map[string]any{"path": "/srv/app/.mcp.json"}, Allow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := p.Decide(Call{Server: tt.server, Tool: "write_file", Arguments: tt.args})
			if v.Decision != tt.want || tt.want == Deny && v.Rule != RuleSelfProtection {
				t.Fatalf("decision = %v by %q (%s), want %v", v.Decision, v.Rule, v.Reason, tt.want)
			}
		})
	}
}

func TestProtectedNameMustBeRelative(t *testing.T) {
	t.Parallel()
	for _, n := range []string{"", "/etc/x", "..", "../x", "."} {
		if _, err := Compile(Spec{ProtectedNames: []string{n}}); err == nil || !strings.Contains(err.Error(), "protected_names[0]") {
			t.Errorf("ProtectedNames %q: err = %v, want one naming protected_names[0]", n, err)
		}
	}
}

func TestOwnFilesAreDeniedInAnyCaseOnACaseInsensitiveSystem(t *testing.T) {
	t.Parallel()
	p, err := Compile(Spec{
		Global:               PolicySpec{Default: "allow", Allow: []string{"mcp:*:*"}},
		Servers:              map[string]ServerSpec{"fs": {Root: "/Users/Me/app", Local: true}},
		Protected:            []string{"/Users/Me/Config/mcpwarden.yaml"},
		ProtectedNames:       []string{".Claude/settings.json"},
		PathsCaseInsensitive: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/Users/Me/Config/mcpwarden.yaml", "/users/me/config/MCPWARDEN.yaml", "/Users/Me/app/.CLAUDE/Settings.json"} {
		if v := p.Decide(Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": path}}); v.Rule != RuleSelfProtection {
			t.Errorf("%q: decision = %v by %q, want deny by %s", path, v.Decision, v.Rule, RuleSelfProtection)
		}
	}
}
