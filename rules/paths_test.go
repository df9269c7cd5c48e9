package rules

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPaths(t *testing.T) {
	t.Parallel()
	p, err := Compile(Spec{Servers: map[string]ServerSpec{"fs": {Root: "/srv/app"}, "web": {}}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		call      Call
		want      []string
		wantKnown bool
	}{
		{"no path arguments", Call{Server: "fs", Tool: "t", Arguments: map[string]any{"n": 1}}, nil, true},
		{"relative and absolute paths are normalised", Call{Server: "fs", Tool: "t", Arguments: map[string]any{"path": "a/../b", "source": "/x//y"}}, []string{"/srv/app/b", "/x/y"}, true},
		{"nested and array paths are found", Call{Server: "fs", Tool: "t", Arguments: map[string]any{"edits": []any{map[string]any{"path": "/a"}}, "paths": []any{"/b", "/a"}}}, []string{"/a", "/b"}, true},
		{"a relative path without a root is unknown", Call{Server: "web", Tool: "t", Arguments: map[string]any{"path": "x"}}, nil, false},
		{"a home path is unknown", Call{Server: "fs", Tool: "t", Arguments: map[string]any{"path": "~/x"}}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, known := p.Paths(tt.call)
			if diff := cmp.Diff(tt.want, got); diff != "" || known != tt.wantKnown {
				t.Errorf("Paths = %v, %v; want %v, %v (-want +got):\n%s", got, known, tt.want, tt.wantKnown, diff)
			}
		})
	}
}

func TestWithPaths(t *testing.T) {
	t.Parallel()
	p, err := Compile(Spec{Servers: map[string]ServerSpec{"fs": {Root: "/srv/app"}}})
	if err != nil {
		t.Fatal(err)
	}
	resolve := func(s string) string { return strings.Replace(s, "/srv/app/link", "/etc", 1) }
	c := Call{Server: "fs", Tool: "read", Arguments: map[string]any{"path": "link/passwd", "note": "link/passwd", "paths": []any{"/srv/app/ok"}}}
	got, changed := p.WithPaths(c, resolve)
	if !changed {
		t.Fatal("WithPaths reported no change")
	}
	want := map[string]any{"path": "/etc/passwd", "note": "link/passwd", "paths": []any{"/srv/app/ok"}}
	if diff := cmp.Diff(want, got.Arguments); diff != "" {
		t.Errorf("WithPaths (-want +got):\n%s", diff)
	}
	if c.Arguments["path"] != "link/passwd" {
		t.Error("WithPaths modified its input")
	}
	if _, changed := p.WithPaths(c, func(s string) string { return s }); changed {
		t.Error("an identity resolve reported a change")
	}
}
