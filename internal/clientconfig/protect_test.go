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
