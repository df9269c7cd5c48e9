package rules

import (
	"slices"
	"testing"
)

func TestWorkspaceJoinsGlobalAndServerDirs(t *testing.T) {
	t.Parallel()
	p, err := Compile(Spec{
		Global: PolicySpec{Workspace: []string{"/srv/app", "/tmp/x/../y"}},
		Servers: map[string]ServerSpec{
			"fs":    {Root: "/srv", Policy: PolicySpec{Workspace: []string{"/srv/app", "/data"}}},
			"other": {},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		server   string
		wantDirs []string
		wantRoot string
	}{
		{"a server with its own workspace gets both, without repeats", "fs", []string{"/srv/app", "/tmp/y", "/data"}, "/srv"},
		{"a server without one gets the global workspace", "other", []string{"/srv/app", "/tmp/y"}, ""},
		{"an unknown server gets the global workspace", "nope", []string{"/srv/app", "/tmp/y"}, ""},
	}
	for _, tt := range tests {
		dirs, root := p.Workspace(tt.server)
		if !slices.Equal(dirs, tt.wantDirs) || root != tt.wantRoot {
			t.Errorf("%s: Workspace(%q) = %q, %q; want %q, %q", tt.name, tt.server, dirs, root, tt.wantDirs, tt.wantRoot)
		}
	}
	var nilPolicy *Policy
	if dirs, root := nilPolicy.Workspace("fs"); dirs != nil || root != "" {
		t.Errorf("a nil policy has workspace %q, %q", dirs, root)
	}
}
