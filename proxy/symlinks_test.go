package proxy

import (
	"os"
	"path/filepath"
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
			if got := resolvePhysical(tt.raw); got != tt.want {
				t.Errorf("resolvePhysical(%q) = %q, want %q", tt.raw, got, tt.want)
			}
		})
	}
}
