package rules

import (
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
