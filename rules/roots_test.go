package rules

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRelativePathReadsAgainstEveryRoot: a stdio server without a cwd runs
// where mcpwarden runs (/work), but server-filesystem resolves a relative
// path against the directory it was given (/srv/sandbox). Read against
// /work alone, `private/s.txt` passed a deny on /srv/sandbox/private; it is
// read against every root now, and the most restrictive verdict stands.
func TestRelativePathReadsAgainstEveryRoot(t *testing.T) {
	t.Parallel()
	policy := PolicySpec{
		Deny:  []string{"mcp:*:*:@path=/srv/sandbox/private/**", "mcp:*:*:@path=/srv/other/keys/**"},
		Ask:   []string{"mcp:*:*:@path=/srv/sandbox/ask/**"},
		Allow: []string{"mcp:*:read_*:@path=/srv/sandbox/**", "mcp:*:list_*:@path={/srv/sandbox,/work}/**"},
	}
	p := mustCompile(t, Spec{
		Global: policy,
		Servers: map[string]ServerSpec{
			"fs":    {Root: "/work", ExtraRoots: []string{"/srv/sandbox"}},
			"two":   {Root: "/work", ExtraRoots: []string{"/srv/sandbox", "/srv/other"}},
			"cwd":   {Root: "/srv/sandbox"},
			"same":  {Root: "/srv/sandbox", ExtraRoots: []string{"/srv/sandbox/", "/srv/sandbox"}},
			"noexe": {ExtraRoots: []string{"/srv/sandbox"}},
		},
	})
	tests := []struct {
		name   string
		server string
		tool   string
		args   map[string]any
		want   Decision
	}{
		{"a relative path into a denied directory of the served directory", "fs", "read_text_file", map[string]any{"path": "private/s.txt"}, Deny},
		{"a dot-slash path into the denied directory", "fs", "read_text_file", map[string]any{"path": "./private/s.txt"}, Deny},
		{"a dot-dot path into the denied directory", "fs", "read_text_file", map[string]any{"path": "x/../private/s.txt"}, Deny},
		{"the denied directory itself", "fs", "list_directory", map[string]any{"path": "private"}, Deny},
		{"a climb out of the served directory and back into it", "fs", "read_text_file", map[string]any{"path": "a/../../sandbox/private/s.txt"}, Deny},
		{"a relative path in an array", "fs", "read_multiple_files", map[string]any{"paths": []any{"ok.txt", "private/s.txt"}}, Deny},
		{"a relative move source", "fs", "move_file", map[string]any{"source": "private/s.txt", "destination": "/tmp/x"}, Deny},
		{"a relative path into an asked directory", "fs", "read_text_file", map[string]any{"path": "ask/a.txt"}, Ask},
		{"an absolute path into the denied directory", "fs", "read_text_file", map[string]any{"path": "/srv/sandbox/private/s.txt"}, Deny},
		{"a relative path allowed under one root only is not allowed", "fs", "read_text_file", map[string]any{"path": "notes.txt"}, Ask},
		{"a relative path allowed under every root is allowed", "fs", "list_directory", map[string]any{"path": "docs"}, Allow},
		{"an absolute path under the allowed root is allowed", "fs", "read_text_file", map[string]any{"path": "/srv/sandbox/notes.txt"}, Allow},
		{"the second of two directories reaches its denied directory", "two", "list_directory", map[string]any{"path": "keys/id"}, Deny},
		{"the first of two directories reaches its denied directory", "two", "list_directory", map[string]any{"path": "private/s.txt"}, Deny},
		{"a path allowed under two roots of three is not allowed", "two", "list_directory", map[string]any{"path": "docs"}, Ask},
		{"a server whose cwd is the served directory reads against it alone", "cwd", "read_text_file", map[string]any{"path": "notes.txt"}, Allow},
		{"a server whose cwd is the served directory still denies", "cwd", "read_text_file", map[string]any{"path": "private/s.txt"}, Deny},
		{"roots repeating the cwd read once", "same", "read_text_file", map[string]any{"path": "notes.txt"}, Allow},
		{"a further root without a cwd denies", "noexe", "read_text_file", map[string]any{"path": "private/s.txt"}, Deny},
		{"a further root without a cwd never allows", "noexe", "read_text_file", map[string]any{"path": "notes.txt"}, Ask},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := p.Decide(Call{Server: tt.server, Tool: tt.tool, Arguments: tt.args})
			if got.Decision != tt.want {
				t.Errorf("Decide(%s %v) = %v by %q (%s), want %v", tt.server, tt.args, got.Decision, got.Rule, got.Reason, tt.want)
			}
		})
	}
}

func TestRelativePathDenyNamesTheReadingThatMatched(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, Spec{
		Global:  PolicySpec{Deny: []string{"mcp:*:*:@path=/srv/sandbox/private/**"}},
		Servers: map[string]ServerSpec{"fs": {Root: "/work", ExtraRoots: []string{"/srv/sandbox"}}},
	})
	got := p.Decide(Call{Server: "fs", Tool: "read_text_file", Arguments: map[string]any{"path": "private/s.txt"}})
	if got.Decision != Deny || !strings.Contains(got.Reason, `"/srv/sandbox/private/s.txt"`) {
		t.Errorf("Decide = %+v, want a deny naming /srv/sandbox/private/s.txt", got)
	}
}

func TestRelativePathOutsideWorkspaceUnderAnyRoot(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, Spec{
		Global: PolicySpec{Allow: []string{"mcp:*:*"}, Workspace: []string{"/srv/sandbox"}, OutsideWorkspace: "deny"},
		Servers: map[string]ServerSpec{
			"fs":     {Root: "/work", ExtraRoots: []string{"/srv/sandbox"}},
			"inside": {Root: "/srv/sandbox", ExtraRoots: []string{"/srv/sandbox/sub"}},
			"other":  {Root: "/srv/sandbox", ExtraRoots: []string{"/srv/elsewhere"}},
			"deep":   {Root: "/srv/sandbox/sub", ExtraRoots: []string{"/srv/sandbox"}},
		},
	})
	tests := []struct {
		name   string
		server string
		path   string
		want   Decision
	}{
		{"a relative path whose cwd reading is outside", "fs", "notes.txt", Deny},
		{"an absolute path inside", "fs", "/srv/sandbox/notes.txt", Allow},
		{"a relative path inside under every root", "inside", "notes.txt", Allow},
		{"a relative path inside the cwd but outside under the served directory", "other", "notes.txt", Deny},
		{"a relative path climbing out of one root only", "deep", "../x", Deny},
		{"a relative path climbing within every root", "deep", "a/../x", Allow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := p.Decide(Call{Server: tt.server, Tool: "read_text_file", Arguments: map[string]any{"path": tt.path}})
			if got.Decision != tt.want {
				t.Errorf("Decide(%s %q) = %+v, want %v", tt.server, tt.path, got, tt.want)
			}
		})
	}
}

// TestLinkUnderFurtherRootReachesDeniedDir: the physical form of the
// reading against a further root is decided too, so a link in the served
// directory into its denied directory is caught.
func TestLinkUnderFurtherRootReachesDeniedDir(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, Spec{
		Global:  PolicySpec{Deny: []string{"mcp:*:*:@path=/srv/sandbox/private/**"}, Allow: []string{"mcp:*:*:@path=/**"}},
		Servers: map[string]ServerSpec{"fs": {Root: "/work", ExtraRoots: []string{"/srv/sandbox"}}},
	})
	c := Call{Server: "fs", Tool: "read_text_file", Arguments: map[string]any{"path": "innocent.txt"}}
	forms, _ := p.PathForms(c)
	if want := []string{"/srv/sandbox/innocent.txt", "/work/innocent.txt"}; len(forms) != 1 || !cmp.Equal(forms[0].Raw, want) {
		t.Fatalf("PathForms = %+v, want one value with raw readings %v", forms, want)
	}
	if got := p.Decide(c); got.Decision != Allow {
		t.Fatalf("without physical forms Decide = %+v, want allow", got)
	}
	c.Physical = map[string]string{"/srv/sandbox/innocent.txt": "/srv/sandbox/private/s.txt", "/work/innocent.txt": "/work/innocent.txt"}
	if got := p.Decide(c); got.Decision != Deny {
		t.Errorf("with the link resolved Decide = %+v, want deny", got)
	}
}

func TestCompileRefusesRelativeExtraRoot(t *testing.T) {
	t.Parallel()
	_, err := Compile(Spec{Servers: map[string]ServerSpec{"fs": {Root: "/work", ExtraRoots: []string{"sandbox"}}}})
	if err == nil || !strings.Contains(err.Error(), `servers.fs.extra_roots[0]: "sandbox" is not absolute`) {
		t.Errorf("Compile = %v, want an error naming the relative root", err)
	}
}

func TestExtraRootsChangePolicyHash(t *testing.T) {
	t.Parallel()
	a := mustCompile(t, Spec{Servers: map[string]ServerSpec{"fs": {Root: "/work"}}})
	b := mustCompile(t, Spec{Servers: map[string]ServerSpec{"fs": {Root: "/work", ExtraRoots: []string{"/srv"}}}})
	if a.SHA256() == b.SHA256() {
		t.Errorf("a further root leaves policy_sha256 unchanged: %s", a.SHA256())
	}
}

func TestDecideWithExtraRootsDoesNotAllocateForAbsolutePaths(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	p := mustCompile(t, Spec{
		Global:  PolicySpec{Deny: []string{"mcp:*:*:@path=/srv/sandbox/private/**"}, Allow: []string{"mcp:fs:read_*:@path=/srv/**"}, Workspace: []string{"/srv"}},
		Servers: map[string]ServerSpec{"fs": {Root: "/work", ExtraRoots: []string{"/srv/sandbox", "/srv/other"}}},
	})
	c := Call{Server: "fs", Tool: "read_text_file", Arguments: map[string]any{"path": "/srv/sandbox/a.txt"}}
	if got := p.Decide(c); got.Decision != Allow {
		t.Fatalf("Decide = %+v, want allow", got)
	}
	if n := testing.AllocsPerRun(100, func() { p.Decide(c) }); n != 0 {
		t.Errorf("Decide allocates %v times", n)
	}
}

// TestRelativePathReachesDeniedDirOfHandedRoot: server-filesystem replaces
// its directories with the MCP roots it is handed (roots/list, relayed to
// the client) and resolves a relative path against them, so a relative
// value is read against Call.UpstreamRoots too.
func TestRelativePathReachesDeniedDirOfHandedRoot(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, Spec{
		Global: PolicySpec{
			Deny:  []string{"mcp:*:*:@path=/home/u/project/private/**"},
			Allow: []string{"mcp:*:read_*:@path=/srv/sandbox/**"},
		},
		Servers: map[string]ServerSpec{"fs": {Root: "/srv/sandbox"}, "remote": {}},
	})
	handed := []string{"/home/u/project/"}
	tests := []struct {
		name   string
		server string
		path   string
		roots  []string
		want   Decision
	}{
		{"a relative path into the denied directory of the handed root", "fs", "private/s.txt", handed, Deny},
		{"a dot-dot path into it", "fs", "a/../private/s.txt", handed, Deny},
		{"a relative path allowed under the cwd only is not allowed", "fs", "notes.txt", handed, Ask},
		{"the same path with no root handed is allowed", "fs", "notes.txt", nil, Allow},
		{"a relative handed root is ignored", "fs", "notes.txt", []string{"project"}, Allow},
		{"an absolute path is read as it is", "fs", "/srv/sandbox/notes.txt", handed, Allow},
		{"a server without a root reads against the handed root", "remote", "private/s.txt", handed, Deny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := p.Decide(Call{Server: tt.server, Tool: "read_text_file", Arguments: map[string]any{"path": tt.path}, UpstreamRoots: tt.roots})
			if got.Decision != tt.want {
				t.Errorf("Decide(%s %q, roots %q) = %+v, want %v", tt.server, tt.path, tt.roots, got, tt.want)
			}
		})
	}
	forms, _ := p.PathForms(Call{Server: "fs", Arguments: map[string]any{"path": "x"}, UpstreamRoots: handed})
	if want := []string{"/home/u/project/x", "/srv/sandbox/x"}; len(forms) != 1 || !cmp.Equal(forms[0].Raw, want) {
		t.Errorf("PathForms = %+v, want raw readings %v (the proxy resolves each on disk)", forms, want)
	}
}
