package rules

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExplain(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, Spec{
		Global: PolicySpec{
			Deny:  []string{"mcp:fs:write_file:path=/etc/**", "mcp:*:*:path=**/.env"},
			Ask:   []string{"mcp:fs:write_file"},
			Allow: []string{"mcp:fs:*"},
		},
		Servers: map[string]ServerSpec{"fs": {Policy: PolicySpec{Default: "ask"}}},
	})
	got := p.Explain(Call{Server: "fs", Tool: "write_file", Arguments: map[string]any{"path": "/etc/passwd"}})
	want := Explanation{
		Verdict: Verdict{
			Decision: Deny, Rule: "mcp:fs:write_file:path=/etc/**", Gate: "policy",
			Reason: `deny rule "mcp:fs:write_file:path=/etc/**" matched path="/etc/passwd"`,
		},
		Steps: []Step{
			{Gate: "policy", List: ListDeny, Rule: "mcp:fs:write_file:path=/etc/**", Where: "policy.deny[0]", Matched: true,
				Why: `path="/etc/passwd" satisfies path=/etc/**`},
			{Gate: "policy", List: ListDeny, Rule: "mcp:*:*:path=**/.env", Where: "policy.deny[1]",
				Why: `path="/etc/passwd" does not satisfy path=**/.env`},
			{Gate: "policy", List: ListAsk, Rule: "mcp:fs:write_file", Where: "policy.ask[0]", Matched: true,
				Why: "the tool matches and there are no conditions"},
			{Gate: "policy", List: ListAllow, Rule: "mcp:fs:*", Where: "policy.allow[0]", Matched: true,
				Why: "the tool matches and there are no conditions"},
			{Gate: "servers.fs.policy", List: ListDefault, Rule: "default", Matched: true,
				Why: "no rule in servers.fs.policy matched; its default is ask"},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Explain (-want +got):\n%s", diff)
	}
}

// TestExplainAgreesWithDecide checks that the traced and untraced paths
// reach the same verdict on every case of the decision tables' policies.
func TestExplainAgreesWithDecide(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, Spec{
		Global: PolicySpec{
			Deny:      []string{"mcp:*:*:path=**/.env", "mcp:fs:edit_file:path!=**/*.kt"},
			Ask:       []string{"mcp:fs:write_file", "mcp:sh:run:cmd~=.*sudo.*"},
			Allow:     []string{"mcp:fs:*", "mcp:fs:read_file:path=/usr/share/**", "mcp:sh:run:cmd=ls*"},
			Workspace: []string{"/srv/app"},
		},
		Servers:  map[string]ServerSpec{"fs": {Root: "/srv/app", Policy: PolicySpec{Deny: []string{"mcp:fs:delete_*"}}}},
		Profiles: map[string]PolicySpec{"ci": {Default: "deny", Allow: []string{"mcp:fs:read_*"}}},
	})
	calls := []Call{
		{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": "x/.env"}},
		{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": "/usr/share/a"}},
		{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": "/etc/passwd"}},
		{Server: "fs", Tool: "edit_file", Arguments: map[string]any{"path": "a.kt"}},
		{Server: "fs", Tool: "edit_file"},
		{Server: "fs", Tool: "write_file", Arguments: map[string]any{"path": "a"}},
		{Server: "fs", Tool: "delete_file", Arguments: map[string]any{"path": "a"}},
		{Server: "sh", Tool: "run", Arguments: map[string]any{"cmd": "ls -la"}},
		{Server: "sh", Tool: "run", Arguments: map[string]any{"cmd": "sudo ls"}},
		{Profile: "ci", Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": "a"}},
		{Profile: "ci", Server: "fs", Tool: "list_directory", Arguments: map[string]any{"path": "a"}},
		{Profile: "nope", Server: "fs", Tool: "read_file"},
	}
	for _, c := range calls {
		d, e := p.Decide(c), p.Explain(c)
		if d != e.Verdict {
			t.Errorf("for %+v Decide = %+v, Explain = %+v", c, d, e.Verdict)
		}
		if len(e.Steps) == 0 {
			t.Errorf("for %+v Explain has no steps", c)
		}
	}
}

func TestListOfNamesTheListOfEachDecision(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		d    Decision
		want string
	}{
		{"a deny comes from the deny list", Deny, "deny"},
		{"an ask comes from the ask list", Ask, "ask"},
		{"an allow comes from the allow list", Allow, "allow"},
		{"what is not a decision is named as the list that refuses", Decision(9), "deny"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ListOf(tt.d).MarshalText()
			if err != nil || string(got) != tt.want || ListOf(tt.d).String() != tt.want {
				t.Errorf("ListOf(%v) = %q, %v; want %q", tt.d, got, err, tt.want)
			}
		})
	}
	if _, err := List(99).MarshalText(); err == nil {
		t.Error("an invalid List marshals")
	}
}
