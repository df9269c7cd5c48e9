package upstream

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestScriptRootIsTheProjectThatInstalledTheScript(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mk := func(rel string) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hoisted := mk("tools/node_modules/@scope/server/dist/index.js")
	mk("tools/node_modules/@scope/server/package.json")
	project := mk("proj/src/server.py")
	mk("proj/pyproject.toml")
	alone := mk("loose/bin/run.js")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"a script in node_modules is run from the project that installed it, for its hoisted dependencies", []string{hoisted, "stdio"}, filepath.Join(dir, "tools")},
		{"a script in a project is run from the project's root", []string{"-u", project}, filepath.Join(dir, "proj")},
		{"a relative script is found in the server's directory", []string{"src/server.py"}, filepath.Join(dir, "proj")},
		{"a script in no project is run from its own directory", []string{alone}, filepath.Join(dir, "loose", "bin")},
		{"no file among the arguments gives no root", []string{"-e", "console.log(1)"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := scriptRoot(tt.args, filepath.Join(dir, "proj"))
			if want, _ := filepath.EvalSymlinks(tt.want); tt.want != "" && got != want && got != tt.want {
				t.Errorf("scriptRoot(%q) = %q, want %q", tt.args, got, tt.want)
			} else if tt.want == "" && got != "" {
				t.Errorf("scriptRoot(%q) = %q, want none", tt.args, got)
			}
		})
	}
}

func TestGrantThatHoldsMcpwardensFileIsNamed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		grant string
		own   []string
		want  []string
	}{
		{"a workspace holding the config names it", "/home/u/proj", []string{"/home/u/proj/mcpwarden.yaml"}, []string{"/home/u/proj/mcpwarden.yaml"}},
		{"the root holds everything", "/", []string{"/etc/mcpwarden.yaml"}, []string{"/etc/mcpwarden.yaml"}},
		{"the audit log's rotations count by their directory", "/var/log", []string{"/var/log/mcpwarden/audit-*"}, []string{"/var/log/mcpwarden/audit-*"}},
		{"a sibling with a common prefix is not held", "/home/u/proj", []string{"/home/u/project/mcpwarden.yaml"}, nil},
		{"a grant inside the state directory does not hold it", "/s/mcpwarden/sandbox/fs/home", []string{"/s/mcpwarden"}, nil},
		{"every file held is named, not the first alone", "/home/u/proj", []string{"/home/u/proj/mcpwarden.yaml", "/elsewhere/tokens", "/home/u/proj/.state/tokens"},
			[]string{"/home/u/proj/mcpwarden.yaml", "/home/u/proj/.state/tokens"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := reachesOwn(tt.grant, tt.own); !slices.Equal(got, tt.want) {
				t.Errorf("reachesOwn(%q) = %q, want %q", tt.grant, got, tt.want)
			}
		})
	}
}
