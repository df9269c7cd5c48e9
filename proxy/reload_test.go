package proxy

import (
	"slices"
	"testing"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/proxy/naming"
	"github.com/mcpwarden/mcpwarden/rules"
)

func compile(t *testing.T, p rules.PolicySpec) *rules.Policy {
	t.Helper()
	policy, err := rules.Compile(rules.Spec{Global: p, Servers: map[string]rules.ServerSpec{"up": {}}})
	if err != nil {
		t.Fatal(err)
	}
	return policy
}

func TestReloadSwapsPolicyAndNames(t *testing.T) {
	t.Parallel()
	sink := &memorySink{}
	e := newEnv(t, allowAll, audit.Config{}, sink)
	c := e.client(t)
	if res := testkit.CallTool(t, c, "up__echo", map[string]any{"text": "before"}); res.IsError {
		t.Fatalf("echo before the reload refused: %+v", res)
	}

	deny := compile(t, rules.PolicySpec{Deny: []string{"mcp:up:echo"}, Allow: []string{"mcp:up:*"}})
	e.srv.Reload(t.Context(), Settings{Policy: deny, Naming: naming.Scheme{Separator: "-"}}, nil)

	if got, want := listNames(t, e), []string{"up-rich", "up-write"}; !slices.Equal(got, want) {
		t.Errorf("tools after the reload = %v, want %v (echo hidden, new separator)", got, want)
	}
	if _, ok := e.srv.Lookup("up__rich"); ok {
		t.Error("the old wire name is still routable after the naming changed")
	}
	if res := testkit.CallTool(t, c, "up-write", map[string]any{"path": "/tmp/x"}); res.IsError {
		t.Errorf("a call under the new name was refused: %+v", res)
	}
	var reloaded bool
	for _, ev := range sink.events(t) {
		if ev.Event == audit.KindToolsChanged && ev.Detail == "config reloaded" && ev.PolicySHA256 == deny.SHA256() {
			reloaded = true
		}
	}
	if !reloaded {
		t.Error("the reload and its policy hash are not audited")
	}
}

func TestReloadWithdrawsARemovedServer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, allowAll, audit.Config{}, &memorySink{})
	e.srv.Reload(t.Context(), Settings{Policy: compile(t, allowAll)}, []string{"up"})
	if got := listNames(t, e); len(got) != 0 {
		t.Errorf("tools after removing the only server = %v, want none", got)
	}
}
