package rules

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// serverViewPolicy protects mcpwarden's files in /etc/mcpwarden and a log
// in /var/log, for a local server working in /srv/app that a config
// allows everything on.
func serverViewPolicy(t testing.TB, global PolicySpec) *Policy {
	t.Helper()
	p, err := Compile(Spec{
		Global:         global,
		Servers:        map[string]ServerSpec{"fs": {Root: "/srv/app", Local: true}},
		Protected:      []string{"/etc/mcpwarden/mcpwarden.yaml", "/var/log/mcpwarden/audit.jsonl", "/var/log/mcpwarden/audit-*"},
		ProtectedNames: []string{".mcp.json", ".claude/settings.json"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestProcSelfIsReadInTheServersView(t *testing.T) {
	t.Parallel()
	p := serverViewPolicy(t, PolicySpec{Default: "allow", Allow: []string{"mcp:*:*"}})
	tests := []struct {
		name string
		path string
	}{
		{"the config under the server's cwd", "/proc/self/cwd/mcpwarden.yaml"},
		{"the audit log under the server's cwd", "/proc/self/cwd/audit.jsonl"},
		{"a rotation under the server's cwd", "/proc/self/cwd/audit-000002.jsonl"},
		{"the config with its directory under the server's cwd", "/proc/self/cwd/mcpwarden/mcpwarden.yaml"},
		{"the config above the server's cwd", "/proc/self/cwd/../../etc/mcpwarden/mcpwarden.yaml"},
		{"the config through /dev/fd/..", "/dev/fd/../cwd/mcpwarden.yaml"},
		{"the config through /proc/self/fd/..", "/proc/self/fd/../cwd/mcpwarden.yaml"},
		{"the config beside stdin", "/dev/stdin/../mcpwarden.yaml"},
		{"the config through /proc/thread-self", "/proc/thread-self/cwd/mcpwarden.yaml"},
		{"the config through /proc/net/..", "/proc/net/../cwd/mcpwarden.yaml"},
		{"the config through a thread's directory", "/proc/self/task/7/cwd/mcpwarden.yaml"},
		{"the config through another pid", "/proc/4242/cwd/mcpwarden.yaml"},
		{"the config through the server's root", "/proc/self/root/etc/mcpwarden/mcpwarden.yaml"},
		{"the config through /proc/thread-self/root", "/proc/thread-self/root/etc/mcpwarden/mcpwarden.yaml"},
		{"the config beside an open descriptor", "/proc/self/fd/3/../mcpwarden.yaml"},
		{"the config beside /dev/fd/3", "/dev/fd/3/../mcpwarden.yaml"},
		{"the config through a root inside a root", "/proc/self/root/proc/self/cwd/mcpwarden.yaml"},
		{"the config as a file URI under the server's cwd", "file:///proc/self/cwd/mcpwarden.yaml"},
		{"the config with /proc spelled with dots", "/./proc/./self/cwd/mcpwarden.yaml"},
		{"the config relative to the root through /proc", "../../proc/self/cwd/mcpwarden.yaml"},
		{"a client config under the server's cwd", "/proc/self/cwd/.mcp.json"},
		{"Claude Code's settings under the server's cwd", "/proc/self/cwd/.claude/settings.json"},
		{"Claude Code's settings from inside .claude", "/proc/self/cwd/settings.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := p.Decide(Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": tt.path}})
			if v.Decision != Deny || v.Rule != RuleSelfProtection {
				t.Fatalf("%q: decision = %v by %q (%s), want deny by %s", tt.path, v.Decision, v.Rule, v.Reason, RuleSelfProtection)
			}
		})
	}
}

func TestAllowNeverMatchesProcSelf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		global PolicySpec
		path   string
	}{
		{"an allow on every path", PolicySpec{Allow: []string{"mcp:fs:*:path=/**"}}, "/proc/self/cwd/notes.txt"},
		{"an allow on @path", PolicySpec{Allow: []string{"mcp:fs:*:@path=/**"}}, "/proc/self/cwd/notes.txt"},
		{"an allow on /proc", PolicySpec{Allow: []string{"mcp:fs:*:path=/proc/**"}}, "/proc/self/environ"},
		{"an allow on the server's own directory", PolicySpec{Allow: []string{"mcp:fs:*:path=/srv/app/**"}}, "/srv/app/../../proc/self/cwd/notes.txt"},
		{"an allow on /dev", PolicySpec{Allow: []string{"mcp:fs:*:path=/dev/**"}}, "/dev/fd/../environ"},
		{"a workspace of /", PolicySpec{Default: "allow", Workspace: []string{"/"}, OutsideWorkspace: "ask", Allow: []string{"mcp:fs:*"}}, "/proc/self/root/srv/app/notes.txt"},
		{"a workspace of /proc", PolicySpec{Default: "allow", Workspace: []string{"/proc"}, OutsideWorkspace: "ask", Allow: []string{"mcp:fs:*"}}, "/proc/4242/cwd/notes.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := serverViewPolicy(t, tt.global)
			v := p.Decide(Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": tt.path}})
			if v.Decision == Allow {
				t.Fatalf("%q: allowed by %q (%s); a path in the server's view has no known place", tt.path, v.Rule, v.Reason)
			}
		})
	}
}

func TestDenyIsTriedOnWhereProcSelfLeads(t *testing.T) {
	t.Parallel()
	p := serverViewPolicy(t, PolicySpec{Default: "allow", Deny: []string{"mcp:*:*:path=**/.env", "mcp:*:*:path=/etc/shadow"}})
	for _, path := range []string{"/proc/self/cwd/.env", "/dev/fd/4/../.env", "/proc/self/root/etc/shadow", "/proc/1/root/etc/shadow"} {
		v := p.Decide(Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": path}})
		if v.Decision != Deny {
			t.Errorf("%q: decision = %v by %q, want deny", path, v.Decision, v.Rule)
		}
	}
}

func TestProcSelfPhysicalFormIsDecided(t *testing.T) {
	t.Parallel()
	p := serverViewPolicy(t, PolicySpec{Default: "allow", Allow: []string{"mcp:*:*"}})
	tests := []struct {
		name     string
		path     string
		physical string
		want     Decision
	}{
		{"resolved to the config", "/proc/self/cwd/x.yaml", "/etc/mcpwarden/mcpwarden.yaml", Deny},
		{"resolved elsewhere", "/proc/self/cwd/x.yaml", "/srv/app/x.yaml", Allow},
		{"left in the server's view", "/proc/self/cwd/x.yaml", "/proc/self/cwd/mcpwarden.yaml", Deny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := p.Decide(Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": tt.path}, Physical: map[string]string{tt.path: tt.physical}})
			if v.Decision != tt.want {
				t.Fatalf("decision = %v by %q (%s), want %v", v.Decision, v.Rule, v.Reason, tt.want)
			}
		})
	}
}

func TestPathFormsHandsTheServersViewToTheProxy(t *testing.T) {
	t.Parallel()
	p := serverViewPolicy(t, PolicySpec{})
	forms, known := p.PathForms(Call{Server: "fs", Tool: "t", Arguments: map[string]any{"path": "/dev/fd/../cwd/x"}})
	if known || len(forms) != 1 || len(forms[0].Raw) == 0 || forms[0].Raw[0] != "/dev/fd/../cwd/x" {
		t.Fatalf("PathForms = %+v, %v; want the raw reading handed over, not known", forms, known)
	}
}

func TestViewOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		path string
		ok   bool
		want serverView
	}{
		{"an ordinary path", "/srv/app/proc/self/cwd", false, serverView{}},
		{"/proc itself", "/proc", false, serverView{}},
		{"/proc's own files", "/proc/meminfo", false, serverView{}},
		{"/dev/null", "/dev/null", false, serverView{}},
		{"the server's cwd", "/proc/self/cwd/a/b", true, serverView{viewCwd, "a/b"}},
		{"/dev/fd/..", "/dev/fd/../cwd/x", true, serverView{viewCwd, "x"}},
		{"a descriptor", "/dev/fd/3/../x", true, serverView{viewFd, "../x"}},
		{"stdin", "/dev/stdin", true, serverView{viewFd, ""}},
		{"/proc/self/environ", "/proc/self/environ", true, serverView{viewProc, ""}},
		{"a pid", "/proc/12", true, serverView{viewProc, ""}},
		{"a thread's root", "/proc/thread-self/root/etc", true, serverView{viewRoot, "etc"}},
		{"a climb out of /proc/self", "/proc/self/../meminfo", false, serverView{}},
		{"/proc/net, a link to self/net", "/proc/net/../cwd/x", true, serverView{viewCwd, "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := viewOf(tt.path)
			if ok != tt.ok || got != tt.want {
				t.Fatalf("viewOf(%q) = %+v, %v; want %+v, %v", tt.path, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestMovingADirectoryHoldingOwnFilesThroughProcSelfIsSelfProtected(t *testing.T) {
	t.Parallel()
	p := serverViewPolicy(t, PolicySpec{Default: "allow", Allow: []string{"mcp:*:*"}})
	tests := []struct {
		name   string
		source string
		want   Decision
	}{
		{"the config's directory under the server's cwd", "/proc/self/cwd/mcpwarden", Deny},
		{"the log's directory from above", "/proc/self/cwd/../log/mcpwarden", Deny},
		{".claude under the server's cwd", "/proc/self/cwd/.claude", Deny},
		{"a directory holding .claude under the server's cwd", "/proc/self/cwd/x/.claude", Deny},
		{"an ordinary directory under the server's cwd", "/proc/self/cwd/src", Allow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := p.Decide(Call{Server: "fs", Tool: "move_file", Arguments: map[string]any{"source": tt.source, "destination": "/srv/app/moved"}})
			if v.Decision != tt.want || tt.want == Deny && v.Rule != RuleSelfProtection {
				t.Fatalf("decision = %v by %q (%s), want %v", v.Decision, v.Rule, v.Reason, tt.want)
			}
		})
	}
}

func FuzzViewOf(f *testing.F) {
	for _, s := range []string{"/proc/self/cwd/x", "/dev/fd/../cwd/x", "/proc/thread-self/root/etc", "/proc/1/task/2/fd/3/../x", "/dev/stdin", "/srv/proc/self", "//proc//./self/cwd"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := viewOf(s)
		if ok && !strings.HasSuffix(s, v.tail) {
			t.Fatalf("viewOf(%q) tail %q is not the end of the path", s, v.tail)
		}
		if ok || !strings.HasPrefix(s, "/") || slices.Contains(strings.Split(s, "/"), "..") {
			return
		}
		// Without `..`, a path the kernel reads in the opening process's
		// view is one of these, cleaned.
		clean := filepath.Clean(s) + "/"
		for _, prefix := range []string{"/proc/self/", "/proc/thread-self/", "/proc/net/", "/dev/fd/", "/dev/stdin/", "/dev/stdout/", "/dev/stderr/"} {
			if strings.HasPrefix(clean, prefix) {
				t.Fatalf("viewOf(%q) = false, but it is under %s", s, prefix)
			}
		}
		if rest, found := strings.CutPrefix(clean, "/proc/"); found && isDigits(strings.Split(rest, "/")[0]) {
			t.Fatalf("viewOf(%q) = false, but it is a process directory", s)
		}
	})
}

func TestProcSelfGuessedWithoutARootIsSelfProtected(t *testing.T) {
	t.Parallel()
	// A loopback server with no known root may work in /: a relative
	// proc/self/cwd/… is then /proc/self/cwd/….
	p, err := Compile(Spec{
		Global:    PolicySpec{Default: "allow", Allow: []string{"mcp:*:*"}},
		Servers:   map[string]ServerSpec{"web": {Local: true}},
		Protected: []string{"/etc/mcpwarden/mcpwarden.yaml"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"proc/self/cwd/mcpwarden.yaml", "../dev/fd/../cwd/mcpwarden.yaml", "proc/self/root/etc/mcpwarden/mcpwarden.yaml"} {
		if v := p.Decide(Call{Server: "web", Tool: "read_file", Arguments: map[string]any{"path": path}}); v.Rule != RuleSelfProtection {
			t.Errorf("%q: decision = %v by %q, want deny by %s", path, v.Decision, v.Rule, RuleSelfProtection)
		}
	}
}
