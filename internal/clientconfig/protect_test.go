package clientconfig

import (
	"path/filepath"
	"slices"
	"testing"
)

func TestEveryDefaultClientFileIsProtected(t *testing.T) {
	t.Parallel()
	const home = "/home/u"
	names := ProjectFiles()
	user := UserFiles("linux", home, "")
	for _, f := range Formats() {
		for _, p := range DefaultPaths(f, "linux", home, "") {
			covered := slices.Contains(user, p)
			for _, n := range names {
				covered = covered || p == n || filepath.IsAbs(p) && len(p) > len(n) && p[len(p)-len(n)-1:] == "/"+n
			}
			if !covered {
				t.Errorf("%s's %s is in neither ProjectFiles nor UserFiles", f, p)
			}
		}
	}
	if got := UserFiles("linux", "", ""); got != nil {
		t.Errorf("UserFiles without a home = %q, want none", got)
	}
}

func TestImportedFromReadsTheHeaderImportWrites(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		source string
		want   string
		ok     bool
	}{
		{"an absolute client file", "/home/u/proj/team-mcp.json", "/home/u/proj/team-mcp.json", true},
		{"a path with a parenthesis", "/home/u/my (work)/x.json", "/home/u/my (work)/x.json", true},
		{"no source", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := ImportedFrom(render(tt.source, ClaudeCode, []server{{key: "fs", command: "node", trans: "stdio"}}, Permissions{}, nil))
			if got != tt.want || ok != tt.ok {
				t.Fatalf("ImportedFrom = %q, %v; want %q, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
	if got, ok := ImportedFrom([]byte("listen: stdio\n")); ok {
		t.Errorf("ImportedFrom of a hand-written config = %q, want none", got)
	}
}
