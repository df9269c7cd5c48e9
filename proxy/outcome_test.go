package proxy

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/approvals"
	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/rules"
)

// A waitingResolver never answers: it waits for its context to end.
type waitingResolver struct{}

func (waitingResolver) Resolve(ctx context.Context, _ approvals.Request) (approvals.Decision, error) {
	<-ctx.Done()
	return approvals.Decision{Via: approvals.ViaCLI}, ctx.Err()
}

// TestAskOutcomeNamesApprovalAndRefusalForEveryResolver drives one asked
// call per way an ask can be settled and checks that the decision event
// says, in outcome, whether it was allowed or refused, and in granted_by
// who settled it: an approval and a refusal never look the same.
func TestAskOutcomeNamesApprovalAndRefusalForEveryResolver(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		resolver approvals.Resolver
		fallback rules.Fallback
		wantBy   audit.GrantedBy
		want     audit.Outcome
	}{
		{"approved with mcpwarden approve", &standInResolver{d: approvals.Decision{Answer: state.AllowOnce, Via: approvals.ViaCLI}}, "", audit.GrantedByApprovalCLI, audit.OutcomeAllowed},
		{"refused with mcpwarden deny", &standInResolver{d: approvals.Decision{Answer: state.Deny, Via: approvals.ViaCLI}}, "", audit.GrantedByApprovalCLI, audit.OutcomeRefused},
		{"approved on the approvals page", &standInResolver{d: approvals.Decision{Answer: state.AllowOnce, Via: approvals.ViaPage}}, "", audit.GrantedByApprovalPage, audit.OutcomeAllowed},
		{"refused on the approvals page", &standInResolver{d: approvals.Decision{Answer: state.Deny, Via: approvals.ViaPage}}, "", audit.GrantedByApprovalPage, audit.OutcomeRefused},
		{"approved by the external resolver", &standInResolver{d: approvals.Decision{Answer: state.AllowOnce, Via: approvals.ViaResolver}}, "", audit.GrantedByResolver, audit.OutcomeAllowed},
		{"refused by the external resolver", &standInResolver{d: approvals.Decision{Answer: state.Deny, Via: approvals.ViaResolver}}, "", audit.GrantedByResolver, audit.OutcomeRefused},
		{"no answer and ask_fallback deny", &standInResolver{err: errors.New("down")}, "", audit.GrantedByNoElicitation, audit.OutcomeRefused},
		{"no answer and ask_fallback allow", &standInResolver{err: errors.New("down")}, "allow", audit.GrantedByNoElicitation, audit.OutcomeAllowed},
		{"no answer in time", waitingResolver{}, "", audit.GrantedByTimeout, audit.OutcomeRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool, rec := startUpstream(t)
			p, err := rules.Compile(rules.Spec{Global: rules.PolicySpec{Ask: []string{"mcp:up:write"}, AskFallback: tt.fallback}, Servers: map[string]rules.ServerSpec{"up": {}}})
			if err != nil {
				t.Fatal(err)
			}
			sink := &memorySink{}
			srv, err := New(Options{Upstream: pool, Policy: p, Audit: audit.New(sink, audit.Config{}), Resolvers: []approvals.Resolver{tt.resolver}, AskTimeout: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			adopt(t, srv)
			e := &env{pool: pool, srv: srv, rec: rec, sink: sink}
			testkit.CallTool(t, e.client(t), "up__write", map[string]any{"path": "/x"})
			if forwarded := len(rec.Arguments()) == 1; forwarded != (tt.want == audit.OutcomeAllowed) {
				t.Errorf("forwarded = %v, want outcome %s", forwarded, tt.want)
			}
			ds := decisionsOf(t, sink, "mcp:up:write")
			if len(ds) != 1 {
				t.Fatalf("decision events = %d, want 1", len(ds))
			}
			if ds[0].Decision != audit.DecisionAsk || ds[0].Outcome != tt.want || ds[0].GrantedBy != tt.wantBy {
				t.Errorf("decision %q outcome %q granted_by %q, want ask, %q, %q", ds[0].Decision, ds[0].Outcome, ds[0].GrantedBy, tt.want, tt.wantBy)
			}
		})
	}
}

// TestAskOutcomeOfASessionGrant checks that a call covered by a session
// grant a resolver gave is recorded as allowed by user_session, and a call
// a rule decided alone has no outcome.
func TestAskOutcomeOfASessionGrant(t *testing.T) {
	t.Parallel()
	pool, rec := startUpstream(t)
	p, err := rules.Compile(rules.Spec{Global: rules.PolicySpec{Ask: []string{"mcp:up:write"}, Allow: []string{"mcp:up:echo"}}, Servers: map[string]rules.ServerSpec{"up": {}}})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memorySink{}
	r := &standInResolver{d: approvals.Decision{Answer: state.AllowSession, Via: approvals.ViaCLI}}
	srv, err := New(Options{Upstream: pool, Policy: p, Audit: audit.New(sink, audit.Config{}), Resolvers: []approvals.Resolver{r}})
	if err != nil {
		t.Fatal(err)
	}
	adopt(t, srv)
	e := &env{pool: pool, srv: srv, rec: rec, sink: sink}
	c := e.client(t)
	testkit.CallTool(t, c, "up__write", map[string]any{"path": "/x"})
	testkit.CallTool(t, c, "up__write", map[string]any{"path": "/x"})
	testkit.CallTool(t, c, "up__echo", map[string]any{"text": "hi"})
	ds := decisionsOf(t, sink, "mcp:up:write")
	if len(ds) != 2 {
		t.Fatalf("decision events = %d, want 2", len(ds))
	}
	if ds[1].Outcome != audit.OutcomeAllowed || ds[1].GrantedBy != audit.GrantedByUserSession {
		t.Errorf("second call: outcome %q granted_by %q, want allowed by user_session", ds[1].Outcome, ds[1].GrantedBy)
	}
	if rd := decisionsOf(t, sink, "mcp:up:echo"); len(rd) != 1 || rd[0].Outcome != audit.OutcomeNone {
		t.Errorf("a rule's allow: %+v, want one decision without outcome", rd)
	}
}
