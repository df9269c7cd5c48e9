package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
)

// viewWorld is mcpwarden, working in the test's directory, in front of
// goserver (which opens raw paths) working in the directory that holds
// mcpwarden's config and audit log, as the claude-desktop and cursor
// examples set cwd; cfglink, in the server's working directory, leads to
// the config. A policy allows every call, so a refusal is the built-in one.
type viewWorld struct {
	f   *fixture
	c   *client.Client
	cfg string // the config's content
	pid int    // goserver's process
}

func newViewWorld(t *testing.T) viewWorld {
	t.Helper()
	return newViewWorldWith(t, "")
}

// newViewWorldWith is newViewWorld with more of the server's YAML (each
// line indented under it).
func newViewWorldWith(t *testing.T, server string) viewWorld {
	t.Helper()
	// The server works in the config's directory and is unconfined
	// (sandbox: off): these tests are of the rules' self-protection,
	// which must hold for a server the kernel does not confine.
	f := newFixture(t, "stdio", fmt.Sprintf("  go:\n    command: %q\n    sandbox: off\n    cwd: %q%s", goServer.binary(t), t.TempDir(), server), "  default: allow\n  allow: [\"mcp:go:*\"]")
	// The server works where the config is; set after newFixture, which
	// picks the directory.
	data, err := os.ReadFile(f.config)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(data), "    cwd: ", fmt.Sprintf("    cwd: %q\n    #", f.dir), 1)
	writeFile(t, f.config, cfg)
	if err := os.Symlink(f.config, filepath.Join(f.dir, "cfglink")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(f.dir, "ok.txt"), "fine to read")
	if wd, _ := os.Getwd(); wd == f.dir {
		t.Fatal("mcpwarden must work elsewhere than the server")
	}
	w := viewWorld{f: f, cfg: cfg}
	w.c = connectStdio(t, f)
	// The allow works, so a refusal below is the self-protection's.
	if text, refused := tryTool(t, w.c, "go__read", map[string]any{"path": "/proc/self/cwd/ok.txt"}); refused || text != "fine to read" {
		t.Fatalf("reading ok.txt in the server's cwd = %q (refused %v), want it", clip(text), refused)
	}
	if server == "" {
		w.pid = childOf(t, f.pid)
	}
	return w
}

// refuses checks that each read of path is refused by the built-in
// self-protection and leaks neither the config nor the audit log.
func (w viewWorld) refuses(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		text, refused := tryTool(t, w.c, "go__read", map[string]any{"path": p})
		if !refused || !strings.Contains(text, "builtin:self-protection") || strings.Contains(text, "mcp:go:*") || strings.Contains(text, `"decision"`) {
			t.Errorf("reading %q = %q (refused %v), want refused by builtin:self-protection", p, clip(text), refused)
		}
	}
}

// TestProcSelfCwdIsSelfProtectedForIsolatedChildren: a call to a server
// isolated per session is served by a child no one knows at decision time;
// a link in the server's working directory, which every child shares, is
// still followed.
func TestProcSelfCwdIsSelfProtectedForIsolatedChildren(t *testing.T) {
	t.Parallel()
	w := newViewWorldWith(t, "\n    isolation: per_session")
	w.refuses(t,
		"/proc/self/cwd/cfglink",
		"/dev/fd/../cwd/cfglink",
		"/proc/thread-self/cwd/audit.jsonl",
		"/proc/self/root"+w.f.dir+"/cfglink",
	)
}

// childOf returns the process id of the one child of parent (goserver,
// started by mcpwarden), from /proc.
func childOf(t *testing.T, parent int) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc here")
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(parent) {
			return pid
		}
	}
	t.Fatalf("no child of mcpwarden (pid %d) found", parent)
	return 0
}

func TestProcSelfCwdReadsInTheServersView(t *testing.T) {
	t.Parallel()
	w := newViewWorld(t)
	w.refuses(t,
		"/proc/self/cwd/audit.jsonl",
		"/proc/self/cwd/mcpwarden.yaml",
		"/proc/self/cwd/cfglink",
		"/proc/self/cwd/./cfglink",
		"file:///proc/self/cwd/cfglink",
		"/proc/"+strconv.Itoa(w.pid)+"/cwd/cfglink",
		"/proc/self/root"+w.f.config,
		"/proc/self/root/proc/self/cwd/cfglink",
		"/proc/net/../cwd/cfglink",
	)
	if data, _ := os.ReadFile(w.f.config); string(data) != w.cfg {
		t.Error("the config was changed")
	}
}

func TestDevFdDotDotCwdIsSelfProtected(t *testing.T) {
	t.Parallel()
	w := newViewWorld(t)
	w.refuses(t,
		"/dev/fd/../cwd/cfglink",
		"/dev/fd/../cwd/audit.jsonl",
		"/proc/self/fd/../cwd/cfglink",
		"/dev/fd/./../cwd/cfglink",
	)
}

func TestProcThreadSelfIsSelfProtected(t *testing.T) {
	t.Parallel()
	w := newViewWorld(t)
	w.refuses(t,
		"/proc/thread-self/cwd/cfglink",
		"/proc/thread-self/cwd/mcpwarden.yaml",
		"/proc/thread-self/../../cwd/cfglink",
		"/proc/thread-self/root"+w.f.config,
	)
}

// TestClientConfigRewriteIsRefusedLive: a server that rewrote the client
// config routing the client through mcpwarden (or mcpwarden itself) would
// take it out of every later session; the built-in rule refuses it, whatever
// the policy allows, and nothing is written.
func TestClientConfigRewriteIsRefusedLive(t *testing.T) {
	t.Parallel()
	w := newViewWorld(t)
	for _, p := range []string{
		filepath.Join(w.f.dir, ".mcp.json"),
		".claude/settings.json",
		".claude/settings.local.json",
		"/proc/self/cwd/.vscode/mcp.json",
		binary,
	} {
		text, refused := tryTool(t, w.c, "go__write", map[string]any{"path": p, "content": `{"mcpServers": {}}`})
		if !refused || !strings.Contains(text, "builtin:self-protection") {
			t.Errorf("writing %q = %q (refused %v), want refused by builtin:self-protection", p, clip(text), refused)
		}
	}
	for _, p := range []string{".mcp.json", ".claude", ".vscode"} {
		if _, err := os.Lstat(filepath.Join(w.f.dir, p)); err == nil {
			t.Errorf("%s was written", p)
		}
	}
}
