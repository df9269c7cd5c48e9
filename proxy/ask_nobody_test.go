package proxy

import (
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/rules"
)

// TestAskNobodyCanAnswerSaysHowToFixIt: a client that cannot be asked, and
// no approvals page or resolver, leaves an ask with no one to answer it;
// the refusal says what to write so that someone can (issue 37).
func TestAskNobodyCanAnswerSaysHowToFixIt(t *testing.T) {
	t.Parallel()
	pool, rec := startUpstream(t)
	p, err := rules.Compile(rules.Spec{Global: rules.PolicySpec{Ask: []string{"mcp:up:write"}}, Servers: map[string]rules.ServerSpec{"up": {}}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Upstream: pool, Policy: p, Audit: audit.New(&memorySink{}, audit.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	adopt(t, srv)
	e := &env{pool: pool, srv: srv, rec: rec}
	res := testkit.CallTool(t, e.client(t), "up__write", map[string]any{"path": "/x"})
	text := testkit.Text(res)
	if !res.IsError || len(rec.Arguments()) != 0 {
		t.Fatalf("the ask was not refused: %q", text)
	}
	for _, want := range []string{"no one approved it", "ask.approvals: local"} {
		if !strings.Contains(text, want) {
			t.Errorf("refusal %q lacks %q", text, want)
		}
	}
}
