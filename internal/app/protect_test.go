package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/rules"
)

// protectWorld is a config in its own directory whose stdio server "fs"
// works in a project directory, with a policy that asks about writes and
// allows the rest, so that a refusal below is the built-in one.
type protectWorld struct {
	dir, project, home string
	cfg                *config.Config
}

func newProtectWorld(t *testing.T, extra string) protectWorld {
	t.Helper()
	w := protectWorld{dir: t.TempDir(), project: t.TempDir(), home: t.TempDir()}
	yaml := "servers:\n  fs:\n    command: \"true\"\n    cwd: " + w.project + "\n    env: {HOME: " + w.home + "}\naudit:\n  path: audit.jsonl\npolicy:\n  default: allow\n  ask: [\"mcp:fs:write_file\"]\n  allow: [\"mcp:fs:*\"]\n" + extra
	path := filepath.Join(w.dir, "mcpwarden.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.cfg = cfg
	return w
}

// setup compiles w's policy on a host whose home is w.home, whose binary
// is exe and whose PATH holds what path maps.
func (w protectWorld) setup(t *testing.T, exe string, path map[string]string) *Setup {
	t.Helper()
	h := host{
		getenv: func(k string) string {
			switch k {
			case "HOME":
				return w.home
			case "PATH":
				return filepath.Join(w.home, ".local", "bin") + string(filepath.ListSeparator) + "/usr/local/bin" + string(filepath.ListSeparator) + "bin"
			}
			return ""
		},
		executable: func() (string, error) { return exe, nil },
		lookPath: func(name string) (string, error) {
			if p, ok := path[name]; ok {
				return p, nil
			}
			return "", os.ErrNotExist
		},
		goos: "linux",
	}
	st, err := newSetup(w.cfg, w.dir, h)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// assertSelfProtected fails the test unless each call of tool on a path is
// denied by the built-in self-protection.
func assertSelfProtected(t *testing.T, p *rules.Policy, tool string, paths ...string) {
	t.Helper()
	for _, path := range paths {
		v := p.Decide(rules.Call{Server: "fs", Tool: tool, Arguments: map[string]any{"path": path, "content": "{}"}})
		if v.Decision != rules.Deny || v.Rule != rules.RuleSelfProtection {
			t.Errorf("%s %q: decision = %v by %q (%s), want deny by %s", tool, path, v.Decision, v.Rule, v.Reason, rules.RuleSelfProtection)
		}
	}
}

func TestClientConfigThatRoutesThroughMcpwardenIsProtected(t *testing.T) {
	t.Parallel()
	w := newProtectWorld(t, "")
	st := w.setup(t, "/opt/mcpwarden/bin/mcpwarden", nil)
	assertSelfProtected(t, st.Policy, "write_file",
		filepath.Join(w.project, ".mcp.json"),
		".mcp.json",
		".claude/settings.json",
		filepath.Join(w.project, ".claude", "settings.local.json"),
		"sub/project/.cursor/mcp.json",
		".vscode/mcp.json",
		"opencode.json",
		filepath.Join(w.home, ".claude.json"),
		filepath.Join(w.home, ".codex", "config.toml"),
		filepath.Join(w.home, ".gemini", "settings.json"),
		filepath.Join(w.home, ".config", "Claude", "claude_desktop_config.json"),
		filepath.Join(w.home, ".config", "Code", "User", "mcp.json"),
		"/proc/self/cwd/.mcp.json",
		"file://"+filepath.Join(w.project, ".claude", "settings.json"),
	)
	assertSelfProtected(t, st.Policy, "read_file", "~/.claude.json")
	// An ordinary file in the project is only asked about, as the policy says.
	if v := st.Policy.Decide(rules.Call{Server: "fs", Tool: "write_file", Arguments: map[string]any{"path": filepath.Join(w.project, "notes.md")}}); v.Decision != rules.Ask {
		t.Errorf("an ordinary write: decision = %v by %q, want ask", v.Decision, v.Rule)
	}
}

func TestMcpwardenBinaryIsProtected(t *testing.T) {
	t.Parallel()
	w := newProtectWorld(t, "")
	bin := filepath.Join(t.TempDir(), "mcpwarden")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "mcpwarden")
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	st := w.setup(t, link, nil)
	assertSelfProtected(t, st.Policy, "write_file", bin, link)
	// And the real one: NewSetup asks the running process.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	real, err := NewSetup(w.cfg, w.dir)
	if err != nil {
		t.Fatal(err)
	}
	assertSelfProtected(t, real.Policy, "write_file", exe)
}

func TestResolverProgramIsProtected(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	prog := filepath.Join(bin, "approve-bot")
	script := filepath.Join(bin, "approve.py")
	for _, f := range []string{prog, script} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		command string
		want    []string
	}{
		{"a program on PATH", `["approve-bot", "--strict"]`, []string{prog}},
		{"an absolute program", `["` + prog + `"]`, []string{prog}},
		{"an interpreter's script", `["python3", "` + script + `"]`, []string{script, "/usr/bin/python3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newProtectWorld(t, "ask:\n  resolver:\n    command: "+tt.command+"\n")
			st := w.setup(t, "/opt/mcpwarden", map[string]string{"approve-bot": prog, "python3": "/usr/bin/python3"})
			assertSelfProtected(t, st.Policy, "write_file", tt.want...)
		})
	}
}

func TestImportedClientConfigIsProtectedWhateverItsName(t *testing.T) {
	t.Parallel()
	w := newProtectWorld(t, "")
	client := filepath.Join(w.project, "team-mcp.json")
	data, err := os.ReadFile(w.cfg.File)
	if err != nil {
		t.Fatal(err)
	}
	header := "# mcpwarden config imported from " + client + " (claude-code) by `mcpwarden import`.\n"
	if err := os.WriteFile(w.cfg.File, append([]byte(header), data...), 0o600); err != nil {
		t.Fatal(err)
	}
	st := w.setup(t, "/opt/mcpwarden", nil)
	assertSelfProtected(t, st.Policy, "write_file", client, "team-mcp.json")
}

func TestMcpwardenOnPathCannotBeShadowed(t *testing.T) {
	t.Parallel()
	// A client config that runs `mcpwarden` finds it on PATH: a new
	// mcpwarden earlier on PATH would run instead.
	w := newProtectWorld(t, "")
	st := w.setup(t, "/usr/local/bin/mcpwarden", nil)
	assertSelfProtected(t, st.Policy, "write_file",
		filepath.Join(w.home, ".local", "bin", "mcpwarden"),
		"/usr/local/bin/mcpwarden",
		"~/.local/bin/mcpwarden",
	)
}

func TestResolverOnPathCannotBeShadowed(t *testing.T) {
	t.Parallel()
	w := newProtectWorld(t, "ask:\n  resolver:\n    command: [approve-bot]\n")
	st := w.setup(t, "/opt/mcpwarden", map[string]string{"approve-bot": "/usr/local/bin/approve-bot"})
	assertSelfProtected(t, st.Policy, "write_file", filepath.Join(w.home, ".local", "bin", "approve-bot"), "/usr/local/bin/approve-bot")
}

func TestAuditSigningKeyAndWitnessAreProtected(t *testing.T) {
	t.Parallel()
	witnessDir := t.TempDir()
	tests := []struct {
		name           string
		keyFile, witns string
		want           func(w protectWorld) []string
	}{
		{"the key made in the state directory", "", "", func(w protectWorld) []string {
			return []string{filepath.Join(w.home, ".local", "state", "mcpwarden", "audit-signing.key")}
		}},
		{"a key file and a witness file", "keys/audit.key", filepath.Join(witnessDir, "witness.jsonl"), func(w protectWorld) []string {
			return []string{filepath.Join(w.dir, "keys", "audit.key"), filepath.Join(witnessDir, "witness.jsonl"), filepath.Join(witnessDir, "witness.jsonl.lock")}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newProtectWorld(t, "")
			w.cfg.Audit.KeyFile, w.cfg.Audit.Witness = tt.keyFile, tt.witns
			st := w.setup(t, "/opt/mcpwarden", nil)
			assertSelfProtected(t, st.Policy, "write_file", tt.want(w)...)
		})
	}
}
