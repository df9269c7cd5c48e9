package proxy

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/approvals"
	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/rules"
)

// A standInResolver is a resolver that answers with d and err and counts
// the asks it got.
type standInResolver struct {
	d     approvals.Decision
	err   error
	asked atomic.Int32
}

func (r *standInResolver) Resolve(context.Context, approvals.Request) (approvals.Decision, error) {
	r.asked.Add(1)
	return r.d, r.err
}

func TestFailingResolverPassesTheAskOn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		second     *standInResolver
		wantCalled bool
		wantBy     audit.GrantedBy
		wantReason []string
	}{
		{"the next resolver allows", &standInResolver{d: approvals.Decision{Answer: state.AllowOnce, Via: approvals.ViaResolver, Who: "bot"}}, true, audit.GrantedByResolver,
			[]string{"the external resolver gave no answer", "allowed once by the external resolver by bot"}},
		{"the next resolver denies", &standInResolver{d: approvals.Decision{Answer: state.Deny, Via: approvals.ViaResolver}}, false, audit.GrantedByResolver,
			[]string{"gave no answer", "denied by the external resolver"}},
		{"the next resolver fails too", &standInResolver{err: errors.New("unreachable")}, false, audit.GrantedByNoElicitation,
			[]string{"gave no answer", "ask_fallback is deny"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool, rec := startUpstream(t)
			p, err := rules.Compile(rules.Spec{Global: rules.PolicySpec{Ask: []string{"mcp:up:write"}}, Servers: map[string]rules.ServerSpec{"up": {}}})
			if err != nil {
				t.Fatal(err)
			}
			sink := &memorySink{}
			first := &standInResolver{err: errors.New("broken")}
			srv, err := New(Options{Upstream: pool, Policy: p, Audit: audit.New(sink, audit.Config{}), Resolvers: []approvals.Resolver{first, tt.second}})
			if err != nil {
				t.Fatal(err)
			}
			adopt(t, srv)
			e := &env{pool: pool, srv: srv, rec: rec, sink: sink}
			res := testkit.CallTool(t, e.client(t), "up__write", map[string]any{"path": "/x"})
			if called := len(rec.Arguments()) == 1; called != tt.wantCalled {
				t.Errorf("forwarded = %v, want %v (result %v)", called, tt.wantCalled, res.Content)
			}
			if first.asked.Load() != 1 || tt.second.asked.Load() != 1 {
				t.Errorf("asked %d and %d times, want each once", first.asked.Load(), tt.second.asked.Load())
			}
			var dec *audit.Event
			for _, ev := range sink.events(t) {
				if ev.Event == audit.KindDecision {
					dec = &ev
				}
			}
			if dec == nil {
				t.Fatal("no decision event")
			}
			if dec.GrantedBy != tt.wantBy {
				t.Errorf("granted_by = %q, want %q", dec.GrantedBy, tt.wantBy)
			}
			for _, want := range tt.wantReason {
				if !strings.Contains(dec.Reason, want) {
					t.Errorf("reason %q lacks %q", dec.Reason, want)
				}
			}
			if !strings.Contains(dec.Error, "broken") {
				t.Errorf("error = %q, want the first resolver's failure", dec.Error)
			}
		})
	}
}
