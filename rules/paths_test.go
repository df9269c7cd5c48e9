package rules

import (
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
