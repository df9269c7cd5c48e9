package rules

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLint(t *testing.T) {
	t.Parallel()
	tools := []ToolInfo{
		{Server: "fs", Name: "read_file"},
		{Server: "fs", Name: "write_file", Optional: []string{"mode"}},
		{Server: "fs", Name: "edit_file", Optional: []string{"path"}},
		{Server: "git", Name: "push"},
	}
	tests := []struct {
		name string
		spec Spec
		want []Finding
	}{
		{
			name: "a clean policy has no findings",
			spec: global(PolicySpec{Deny: []string{"mcp:git:push"}, Allow: []string{"mcp:fs:read_file"}}),
		},
		{
			name: "an allow shadowed by a deny is unreachable",
			spec: global(PolicySpec{Deny: []string{"mcp:fs:*"}, Allow: []string{"mcp:fs:read_file"}}),
			want: []Finding{{Where: "policy.allow[0]", Rule: "mcp:fs:read_file",
				Message: `is unreachable: deny rule "mcp:fs:*" (policy.deny[0]) matches every call it matches`}},
		},
		{
			name: "an allow with more conditions than the deny is unreachable",
			spec: global(PolicySpec{Deny: []string{"mcp:fs:read_*:path=/etc/**"}, Allow: []string{"mcp:fs:read_file:path=/etc/**:mode=r"}}),
			want: []Finding{{Where: "policy.allow[0]", Rule: "mcp:fs:read_file:path=/etc/**:mode=r",
				Message: `is unreachable: deny rule "mcp:fs:read_*:path=/etc/**" (policy.deny[0]) matches every call it matches`}},
		},
		{
			name: "a server allow shadowed by a global ask is unreachable",
			spec: Spec{
				Global:  PolicySpec{Ask: []string{"mcp:*:*"}},
				Servers: map[string]ServerSpec{"fs": {Policy: PolicySpec{Allow: []string{"mcp:fs:read_file"}}}},
			},
			want: []Finding{{Where: "servers.fs.policy.allow[0]", Rule: "mcp:fs:read_file",
				Message: `is unreachable: ask rule "mcp:*:*" (policy.ask[0]) matches every call it matches`}},
		},
		{
			name: "a deny with a narrower condition does not shadow",
			spec: global(PolicySpec{Deny: []string{"mcp:fs:read_*:path=/etc/**"}, Allow: []string{"mcp:fs:read_file"}}),
		},
		{
			name: "a rule that matches no known tool",
			spec: global(PolicySpec{Deny: []string{"mcp:fs:remove_file"}}),
			want: []Finding{{Where: "policy.deny[0]", Rule: "mcp:fs:remove_file", Message: "matches no known tool"}},
		},
		{
			name: "a rule in a server policy naming another server",
			spec: Spec{Servers: map[string]ServerSpec{"fs": {Policy: PolicySpec{Deny: []string{"mcp:git:push"}}}}},
			want: []Finding{{Where: "servers.fs.policy.deny[0]", Rule: "mcp:git:push",
				Message: "names another server than fs; a rule in servers.fs.policy applies only to fs's tools, so it never matches"}},
		},
		{
			name: "a deny conditioned on an optional argument",
			spec: global(PolicySpec{Deny: []string{"mcp:fs:*:path=/etc/**", "mcp:fs:edit_file:path!=**/*.kt"}}),
			want: []Finding{{Where: "policy.deny[0]", Rule: "mcp:fs:*:path=/etc/**",
				Message: `conditions on "path", which mcp:fs:edit_file marks optional: a call that omits it is not denied; allow what is safe instead, or use !=`}},
		},
		{
			name: "a duplicate rule",
			spec: global(PolicySpec{Deny: []string{"mcp:git:push"}, Ask: []string{"mcp:git:push"}}),
			want: []Finding{{Where: "policy.ask[0]", Rule: "mcp:git:push", Message: "repeats policy.deny[0]"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := mustCompile(t, tt.spec).Lint(tools)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Lint (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLintPathConditionOnAKeyTheToolDoesNotTake(t *testing.T) {
	t.Parallel()
	tools := []ToolInfo{
		{Server: "fs", Name: "read_text_file", Keys: []string{"path", "head"}},
		{Server: "fs", Name: "read_multiple_files", Keys: []string{"paths"}},
		{Server: "fs", Name: "move_file", Keys: []string{"source", "destination"}},
		{Server: "fs", Name: "list_allowed_directories"},
		{Server: "go", Name: "read", Keys: []string{"PATH"}},
		{Server: "web", Name: "fetch", Keys: []string{"url"}},
	}
	const multi = `conditions on "path", but mcp:fs:read_multiple_files takes "paths": the rule never sees those paths; use @path (every path-like value of a call) instead`
	tests := []struct {
		name string
		spec Spec
		want []Finding
	}{
		{
			name: "a deny on path for read_multiple_files, which takes paths",
			spec: global(PolicySpec{Deny: []string{"mcp:fs:read_multiple_files:path=**/.env"}}),
			want: []Finding{{Where: "policy.deny[0]", Rule: "mcp:fs:read_multiple_files:path=**/.env", Message: multi}},
		},
		{
			name: "a deny on path for every fs tool names each tool that takes other paths",
			spec: global(PolicySpec{Deny: []string{"mcp:fs:*:path=**/.env"}}),
			want: []Finding{{Where: "policy.deny[0]", Rule: "mcp:fs:*:path=**/.env",
				Message: `conditions on "path", but mcp:fs:read_multiple_files takes "paths"; mcp:fs:move_file takes "source", "destination": the rule never sees those paths; use @path (every path-like value of a call) instead`}},
		},
		{
			name: "an ask is linted like a deny",
			spec: global(PolicySpec{Ask: []string{"mcp:fs:read_multiple_files:path=**/.env"}}),
			want: []Finding{{Where: "policy.ask[0]", Rule: "mcp:fs:read_multiple_files:path=**/.env", Message: multi}},
		},
		{
			name: "an allow is not: it only narrows",
			spec: global(PolicySpec{Allow: []string{"mcp:fs:read_multiple_files:path=/srv/**"}}),
		},
		{
			name: "a negated condition matches the absent key, so it is no hole",
			spec: global(PolicySpec{Deny: []string{"mcp:fs:read_multiple_files:path!=/srv/**"}}),
		},
		{
			name: "a key the tool takes under another case is taken",
			spec: global(PolicySpec{Deny: []string{"mcp:go:read:path=/etc/**"}}),
		},
		{
			name: "a tool with no path-like key is not judged",
			spec: global(PolicySpec{Deny: []string{"mcp:web:fetch:path=/etc/**", "mcp:fs:list_allowed_directories:path=/etc/**"}}),
		},
		{
			name: "@path covers every path key, so it is the fix, not a finding",
			spec: global(PolicySpec{Deny: []string{"mcp:fs:*:@path=**/.env"}}),
		},
		{
			name: "a condition on a key that is not path-like is not judged",
			spec: global(PolicySpec{Deny: []string{"mcp:fs:read_multiple_files:mode=x"}}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := mustCompile(t, tt.spec).Lint(tools)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Lint (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnlistedPathKeys(t *testing.T) {
	t.Parallel()
	tools := []ToolInfo{
		{Server: "img", Name: "render", StringKeys: []string{"outputDir", "config_file", "profile", "format", "path", "SRC_FOLDER", "working_directory"}},
		{Server: "git", Name: "log", StringKeys: []string{"repo_path", "revision"}},
	}
	msg := func(k string) string {
		return "takes " + quote(k) + ", named like a path, but it is not in path_keys: its value is matched as plain text, not as a path (not cleaned, not in @path, not confined to the workspace); add it to path_keys"
	}
	tests := []struct {
		name     string
		pathKeys []string
		want     []Finding
	}{
		{
			name:     "names with a path word that the list lacks are reported",
			pathKeys: []string{"path", "repo_path"},
			want: []Finding{
				{Where: "mcp:img:render", Message: msg("outputDir")},
				{Where: "mcp:img:render", Message: msg("config_file")},
				{Where: "mcp:img:render", Message: msg("SRC_FOLDER")},
				{Where: "mcp:img:render", Message: msg("working_directory")},
			},
		},
		{
			name:     "keys in the list are not, under folding too",
			pathKeys: []string{"path", "repo_path", "output_dir", "configFile", "src_folder", "working-directory"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := mustCompile(t, Spec{PathKeys: tt.pathKeys}).UnlistedPathKeys(tools)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("UnlistedPathKeys (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNamedLikePath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		want bool
	}{
		{"path", true}, {"file_path", true}, {"filePath", true}, {"outputDir", true},
		{"folder", true}, {"targetDirectory", true}, {"cwd", true}, {"FILES", true},
		{"profile", false}, {"redirect_uri", false}, {"content", false}, {"pattern", false},
		{"dirty", false}, {"", false},
	}
	for _, tt := range tests {
		if got := namedLikePath(tt.name); got != tt.want {
			t.Errorf("namedLikePath(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// FuzzNamedLikePath checks that a name called path-like holds a path word,
// and that a path word stays one whatever is joined to it with `_`.
func FuzzNamedLikePath(f *testing.F) {
	for _, s := range []string{"path", "outputDir", "profile", "SRC_FOLDER", "ſource", "Ｐath", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if namedLikePath(s) {
			lower := strings.ToLower(s)
			if !slices.ContainsFunc([]string{"path", "file", "dir", "folder", "cwd"}, func(w string) bool { return strings.Contains(lower, w) }) {
				t.Errorf("namedLikePath(%q) holds no path word", s)
			}
		}
		if !namedLikePath(s + "_path") {
			t.Errorf("namedLikePath(%q) is false", s+"_path")
		}
	})
}
