package ondisk

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/mcpwarden/mcpwarden/rules"
)

// physicalDir returns a temporary directory with its own symlinks resolved,
// so that test paths are physical.
func physicalDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestSymlinkDotDotDoesNotEscapeAllow(t *testing.T) {
	t.Parallel()
	// app/l → outside/inner: the kernel resolves app/l/../secret.txt
	// through the link, then applies .., and opens outside/secret.txt;
	// cleaned on paper it would be app/secret.txt, inside the allow.
	dir := physicalDir(t)
	app, inner := filepath.Join(dir, "app"), filepath.Join(dir, "outside", "inner")
	for _, d := range []string{app, inner} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(inner, filepath.Join(app, "l")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../outside/inner", filepath.Join(app, "rel")); err != nil {
		t.Fatal(err)
	}
	p, err := rules.Compile(rules.Spec{
		Global:  rules.PolicySpec{Allow: []string{"mcp:fs:*:path=" + app + "/**"}},
		Servers: map[string]rules.ServerSpec{"fs": {Root: app}},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		want rules.Decision
	}{
		{"a dot-dot after an absolute link", "l/../secret.txt", rules.Ask},
		{"a dot-dot after a relative link", "rel/../secret.txt", rules.Ask},
		{"an absolute path with a dot-dot after a link", app + "/l/../secret.txt", rules.Ask},
		{"a file through a link", "l/x.txt", rules.Ask},
		{"two dot-dots after a link that come back inside", "l/../../app/secret.txt", rules.Allow},
		{"a link inside a file URI", "file://" + app + "/l/../secret.txt", rules.Ask},
		{"a plain file inside", "secret.txt", rules.Allow},
		{"a new file inside", "new/dir/x.txt", rules.Allow},
		{"a dot-dot without a link", "sub/../secret.txt", rules.Allow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := rules.Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": tt.path}}
			c.Physical = PhysicalForms(p, c)
			if got := p.Decide(c); got.Decision != tt.want {
				t.Errorf("Decide(%q) = %v by %q (%s), want %v", tt.path, got.Decision, got.Rule, got.Reason, tt.want)
			}
		})
	}
}

func TestResolvePhysical(t *testing.T) {
	t.Parallel()
	dir := physicalDir(t)
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"l": filepath.Join(dir, "a", "b"), "loop": "loop", "chain": "l"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, raw, want string
	}{
		{"a plain path", dir + "/a/b", dir + "/a/b"},
		{"a link followed before its dot-dot", dir + "/l/../x", dir + "/a/x"},
		{"a chain of links", dir + "/chain/../../y", dir + "/y"},
		{"a missing tail is joined lexically", dir + "/a/new/../z", dir + "/a/z"},
		{"doubled slashes and dots", dir + "//a/./b/", dir + "/a/b"},
		{"a loop does not hang", dir + "/loop/x", dir + "/loop/x"},
		{"dot-dot above the root stays at the root", "/../../etc", "/etc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := resolvePhysical(tt.raw, 0); got != tt.want {
				t.Errorf("resolvePhysical(%q, 0) = %q, want %q", tt.raw, got, tt.want)
			}
		})
	}
}

func TestProcSelfIsResolvedInTheServersProcess(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/cwd"); err != nil {
		t.Skip("no /proc here")
	}
	// The server works in its own directory, where a link leads to
	// mcpwarden's config; mcpwarden works elsewhere.
	cwd := physicalDir(t)
	cfg := filepath.Join(physicalDir(t), "mcpwarden.yaml")
	if err := os.Symlink(cfg, filepath.Join(cwd, "cfglink")); err != nil {
		t.Fatal(err)
	}
	server := exec.CommandContext(t.Context(), "sleep", "60")
	server.Dir = cwd
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Process.Kill(); _ = server.Wait() })
	pid := server.Process.Pid
	l := filepath.Join(physicalDir(t), "procself")
	if err := os.Symlink("/proc/self", l); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		raw  string
		pid  int
		want string
	}{
		{"the server's cwd", "/proc/self/cwd/x", pid, cwd + "/x"},
		{"a link in the server's cwd", "/proc/self/cwd/cfglink", pid, cfg},
		{"the server's cwd through /dev/fd/..", "/dev/fd/../cwd/cfglink", pid, cfg},
		{"the server's cwd through /proc/thread-self", "/proc/thread-self/cwd/cfglink", pid, cfg},
		{"the server's cwd by its pid", "/proc/" + strconv.Itoa(pid) + "/cwd/cfglink", pid, cfg},
		{"the server's root", "/proc/self/root" + cfg, pid, cfg},
		{"a link to /proc/self", l + "/cwd/cfglink", pid, cfg},
		{"an unknown server", "/proc/self/cwd/cfglink", 0, "/proc/self/cwd/cfglink"},
		{"an unknown server through a link", l + "/fd/3/../x", 0, "/proc/self/fd/3/../x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := resolvePhysical(tt.raw, tt.pid); got != tt.want {
				t.Errorf("resolvePhysical(%q, %d) = %q, want %q", tt.raw, tt.pid, got, tt.want)
			}
		})
	}
}

func TestProcSelfCwdFollowsLinksInTheServersDirWhenItsProcessIsUnknown(t *testing.T) {
	t.Parallel()
	// Isolated children share the server's cwd but no one of them is the
	// server: a link there to mcpwarden's config is still followed.
	cwd := physicalDir(t)
	cfg := filepath.Join(physicalDir(t), "mcpwarden.yaml")
	if err := os.Symlink(cfg, filepath.Join(cwd, "cfglink")); err != nil {
		t.Fatal(err)
	}
	p, err := rules.Compile(rules.Spec{
		Global:    rules.PolicySpec{Default: "allow", Allow: []string{"mcp:fs:*"}},
		Servers:   map[string]rules.ServerSpec{"fs": {Root: cwd, Local: true}},
		Protected: []string{cfg},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/proc/self/cwd/cfglink", "/dev/fd/../cwd/cfglink", "/proc/thread-self/cwd/./cfglink", "/proc/self/root" + cwd + "/cfglink"} {
		c := rules.Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": path}}
		c.Physical = PhysicalFormsIn(p, c, 0)
		if v := p.Decide(c); v.Rule != rules.RuleSelfProtection {
			t.Errorf("%q: decision = %v by %q (physical %v), want deny by %s", path, v.Decision, v.Rule, c.Physical, rules.RuleSelfProtection)
		}
	}
}
