package argview

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRenderLaysOutOneLinePerArgumentAndForm(t *testing.T) {
	t.Parallel()
	pathKey := func(k string) bool { return k == "path" || k == "paths" }
	token := "ghp_" + strings.Repeat("A1b2", 9)
	tests := []struct {
		name string
		call Call
		max  int
		want []string
		cut  int
	}{
		{
			name: "a call without arguments says so",
			want: []string{HeadingArguments, NoArguments},
		},
		{
			name: "keys are sorted and quoted, values quoted on one line",
			call: Call{Arguments: map[string]any{"b\nc": "x\ny", "a": map[string]any{"z": []any{1.5, nil, true}, "\u202e": "v"}}},
			want: []string{HeadingArguments, `"a": {"z": [1.5, null, true], "\u202e": "v"}`, `"b\nc": "x\ny"`},
		},
		{
			name: "a path's forms are under it, the ones equal to the value left out",
			call: Call{
				Arguments: map[string]any{"path": "l/../s.txt", "paths": []any{"/srv/ok.txt", "~/x"}},
				Paths: []Path{
					{Value: "l/../s.txt", Readings: []Reading{{Lexical: "/srv/s.txt", OnDisk: "/out/s.txt"}}},
					{Value: "/srv/ok.txt", Readings: []Reading{{Lexical: "/srv/ok.txt", OnDisk: "/srv/ok.txt"}}},
					{Value: "~/x", Unknown: true},
				},
				PathKey: pathKey,
			},
			want: []string{
				HeadingArguments,
				`"path": "l/../s.txt"`, `  which is "/srv/s.txt"`, `  on disk: "/out/s.txt"`,
				`"paths": ["/srv/ok.txt", "~/x"]`,
				HeadingPaths, `"~/x"`, LineUnknown,
			},
		},
		{
			name: "undeclared keys are under the warning, at the top level and below",
			call: Call{
				Arguments: map[string]any{"path": "/a", "x": 1, "opts": map[string]any{"ok": 1, "evil": "/etc"}},
				Schema:    map[string]any{"properties": map[string]any{"path": map[string]any{}, "opts": map[string]any{"properties": map[string]any{"ok": map[string]any{}}}}},
			},
			want: []string{HeadingArguments, `"opts": {"evil": "/etc", "ok": 1}`, `"path": "/a"`, HeadingUndeclared, `"x": 1`, `"opts"."evil": "/etc"`},
		},
		{
			name: "a credential under an undeclared key below a path-like key is a path, shown",
			call: Call{
				Arguments: map[string]any{"path": map[string]any{"x": "/k/ghp_" + strings.Repeat("A1b2", 9)}},
				Schema:    map[string]any{"properties": map[string]any{"path": map[string]any{"properties": map[string]any{}}}},
				PathKey:   pathKey,
			},
			want: []string{HeadingArguments, `"path": {"x": "/k/` + token + `"}`, HeadingUndeclared, `"path"."x": "/k/` + token + `"`},
		},
		{
			name: "credentials are hidden by their value, never by the key's name",
			call: Call{Arguments: map[string]any{"key": "reports/q4.csv", "auth": "Bearer " + token + " (ci)", "path": "/k/" + token}, PathKey: pathKey},
			want: []string{HeadingArguments, `"auth": "Bearer " + <hidden: auth_header/token, 40 characters> + " (ci)"`, `"key": "reports/q4.csv"`, `"path": "/k/` + token + `"`},
		},
		{
			name: "a long key and a long value are cut, saying how much",
			call: Call{Arguments: map[string]any{strings.Repeat("k", 30): strings.Repeat("v", 30)}},
			max:  10,
			want: []string{HeadingArguments, `"kkkkkkkkk… (22 more characters): "vvvvvvvvv… (22 more characters)`},
			cut:  44,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Render(tt.call, tt.max)
			if diff := cmp.Diff(tt.want, got.Lines); diff != "" {
				t.Errorf("Render lines (-want +got):\n%s", diff)
			}
			if got.Cut != tt.cut {
				t.Errorf("Render cut %d characters, want %d", got.Cut, tt.cut)
			}
		})
	}
}

func TestHideReplacesOnlyCredentials(t *testing.T) {
	t.Parallel()
	token := "ghp_" + strings.Repeat("A1b2", 9)
	got := Hide(map[string]any{"api_key": "sk-1", "note": "see " + token, "path": token, "list": []any{token}}, func(k string) bool { return k == "path" })
	want := map[string]any{"api_key": "sk-1", "note": "see <hidden: token, 40 characters>", "path": token, "list": []any{"<hidden: token, 40 characters>"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Hide (-want +got):\n%s", diff)
	}
}
