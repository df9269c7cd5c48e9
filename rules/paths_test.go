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
		{"a home path without a home is unknown", Call{Server: "fs", Tool: "t", Arguments: map[string]any{"path": "~/x"}}, []string{"/srv/app/~/x"}, false},
		{"a non-string path is unknown", Call{Server: "fs", Tool: "t", Arguments: map[string]any{"path": 3}}, nil, false},
		{"a file URI under a URL key is a path", Call{Server: "fs", Tool: "t", Arguments: map[string]any{"uri": "file:///srv/app/.env"}}, []string{"/srv/app/.env", "/srv/app/file:/srv/app/.env"}, true},
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

func TestPathForms(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, Spec{Servers: map[string]ServerSpec{"fs": {Root: "/srv/app", Home: "/home/u"}}})
	c := Call{Server: "fs", Tool: "t", Arguments: map[string]any{
		"path":  "app/l/../secret.txt",
		"files": []any{"~/.ssh/id_rsa", "/srv/cafe\u0301"},
		"uri":   "file:///etc/pass%77d",
		"url":   "https://example.com/x",
	}, Physical: map[string]string{"/srv/app/app/l/../secret.txt": "/outside/secret.txt"}}
	got, known := p.PathForms(c)
	want := []PathForm{
		{Value: "/srv/cafe\u0301", Raw: []string{"/srv/cafe\u0301"}, Forms: []string{"/srv/cafe\u0301", "/srv/caf\u00e9"}, Known: true},
		{Value: "app/l/../secret.txt", Raw: []string{"/srv/app/app/l/../secret.txt"}, Forms: []string{"/outside/secret.txt", "/srv/app/app/secret.txt"}, Known: true},
		{
			Value: "file:///etc/pass%77d",
			Raw:   []string{"///etc/pass%77d", "///etc/passwd", "/etc/pass%77d", "/etc/passwd", "/srv/app/file:///etc/pass%77d"},
			Forms: []string{"/etc/pass%77d", "/etc/passwd", "/srv/app/file:/etc/pass%77d"}, Known: true,
		},
		{Value: "~/.ssh/id_rsa", Raw: []string{"/home/u/.ssh/id_rsa", "/srv/app/~/.ssh/id_rsa"}, Forms: []string{"/home/u/.ssh/id_rsa", "/srv/app/~/.ssh/id_rsa"}, Known: true},
	}
	if diff := cmp.Diff(want, got); diff != "" || !known {
		t.Errorf("PathForms known = %v (-want +got):\n%s", known, diff)
	}
}
