package proxy

import (
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/internal/approvals"
	"github.com/mcpwarden/mcpwarden/internal/egress"
	"github.com/mcpwarden/mcpwarden/internal/state/memory"
	"github.com/mcpwarden/mcpwarden/proxy/httpguard"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// Whose connection it is: the session a connection is attributed to, and
// who is asked about it (see DecideConnect).

// TestConnectAskWithNoOneToAskIsRefused: with no client session to
// attribute a connection to and no approvals page, an ask is refused,
// saying so, even with ask_fallback: allow; allow and deny rules still
// decide.
func TestConnectAskWithNoOneToAskIsRefused(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, connectSpec(rules.PolicySpec{
		AskFallback: "allow",
		Ask:         []string{"mcp:fs:network/connect:host=asked.test"},
		Allow:       []string{"mcp:fs:network/connect:host=api.github.com"},
	}), Options{})
	if got := e.connect(t, "api.github.com", 443); got.Decision != egress.Allow {
		t.Errorf("an allowed host without a session was refused: %s", got.Reason)
	}
	got := e.connect(t, "asked.test", 443)
	if got.Decision != egress.Refuse || !strings.Contains(got.Reason, "no client session that may use fs") {
		t.Errorf("an ask with no one to ask = %v (%q), want refused saying no session may be asked", got.Decision, got.Reason)
	}
}

// TestConnectAskGoesToNoneOfTwoPrincipalsButToTheChildsOwn: a connection
// of a shared server that sessions of two principals use is asked of
// neither; one of a child isolated per principal is asked of its own.
func TestConnectAskGoesToNoneOfTwoPrincipalsButToTheChildsOwn(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, connectSpec(rules.PolicySpec{Ask: []string{"mcp:fs:network/connect"}}), Options{})
	alice := &formHuman{answer: func(string) string { return "allow_once" }}
	bob := &formHuman{answer: func(string) string { return "allow_once" }}
	ca, cb := e.client(t, client.WithElicitationHandler(alice)), e.client(t, client.WithElicitationHandler(bob))
	if _, err := ca.ListTools(httpguard.ContextWithPrincipal(t.Context(), "token:alice"), mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cb.ListTools(httpguard.ContextWithPrincipal(t.Context(), "token:bob"), mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	if got := e.connect(t, "api.github.com", 443); got.Decision != egress.Refuse {
		t.Error("a connection two principals could have caused was allowed")
	}
	if len(alice.seen())+len(bob.seen()) != 0 {
		t.Errorf("alice was shown %q and bob %q, want neither asked", alice.seen(), bob.seen())
	}
	// From alice's own child (isolation per principal), only she is asked.
	fromAlice := &upstream.Route{Principal: "token:alice", Instance: "principal:token:alice"}
	if got := e.srv.egress.DecideConnect(t.Context(), "fs", fromAlice, egress.Request{Host: "api.github.com", Port: 443}); got.Decision != egress.Allow {
		t.Errorf("alice allowed her child's connection, but it was refused: %s", got.Reason)
	}
	if len(alice.seen()) != 1 || len(bob.seen()) != 0 {
		t.Errorf("alice was shown %q and bob %q, want alice asked once", alice.seen(), bob.seen())
	}
	ds := decisionsOf(t, e.sink, connectCanonical)
	if last := ds[len(ds)-1]; last.Principal != "token:alice" || last.Instance != fromAlice.Instance {
		t.Errorf("audited as principal %q instance %q, want alice's child", last.Principal, last.Instance)
	}
}

// TestConnectAskOfAModernClientGoesToTheApprovalsPage: a client of
// protocol 2026-07-28 answers asks only by retrying a tool call, which a
// connection made during its call is not; the ask goes on to the
// approvals page, and leaves no multi round-trip state that no retry will
// ever take (enough of them would crowd out the asks of tool calls).
func TestConnectAskOfAModernClientGoesToTheApprovalsPage(t *testing.T) {
	t.Parallel()
	r := &recordingResolver{}
	e := newCatalogEnv(t, connectSpec(rules.PolicySpec{Ask: []string{"mcp:fs:network/connect"}}), Options{Resolvers: []approvals.Resolver{r}})
	// A modern client's tool call to fs is in flight.
	call := server.WithRequestProtocolInfo(t.Context(), &server.RequestProtocolInfo{Modern: true, ClientCapabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}}})
	defer e.srv.relay.enter(call, "fs")()
	if got := e.connect(t, "api.github.com", 443); got.Decision != egress.Refuse {
		t.Fatal("the resolver denied it, but it was allowed")
	}
	r.mu.Lock()
	asked := len(r.reqs)
	r.mu.Unlock()
	pending := e.srv.state.store.(*memory.Store).HeldTokens()
	if asked != 1 || pending != 0 {
		t.Errorf("the approvals page was asked %d times and %d round-trip asks are pending, want 1 and 0", asked, pending)
	}
}

// TestProfileDenyOfConnectionsHoldsOutsideACall: a connection the server
// makes outside any call is decided for the newest session that may use
// the server, under its profile — not, because that profile hides
// network/connect, for no session at all, which the global rules allow.
func TestProfileDenyOfConnectionsHoldsOutsideACall(t *testing.T) {
	t.Parallel()
	spec := connectSpec(rules.PolicySpec{Allow: []string{"mcp:*:*"}})
	spec.Profiles = map[string]rules.PolicySpec{"ci": {Deny: []string{"mcp:fs:network/connect"}}}
	e := newCatalogEnv(t, spec, Options{})
	c := e.client(t)
	if _, err := c.ListTools(httpguard.ContextWithProfile(t.Context(), "ci"), mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	if got := e.connect(t, "api.github.com", 443); got.Decision != egress.Refuse {
		t.Error("the only session's profile denies connections, but one went out")
	}
}

// TestConnectOfTwoPrincipalsIsNotDecidedUnderLooserRules: when sessions of
// two principals may use the server, the newest one's profile decides a
// connection, not the rules of a request without a token, which no
// profile narrows.
func TestConnectOfTwoPrincipalsIsNotDecidedUnderLooserRules(t *testing.T) {
	t.Parallel()
	spec := connectSpec(rules.PolicySpec{Allow: []string{"mcp:*:*"}})
	spec.Profiles = map[string]rules.PolicySpec{"ci": {Deny: []string{"mcp:fs:network/connect"}}}
	e := newCatalogEnv(t, spec, Options{})
	for _, who := range []string{"token:alice", "token:bob"} {
		c := e.client(t)
		if _, err := c.ListTools(httpguard.ContextWithProfile(httpguard.ContextWithPrincipal(t.Context(), who), "ci"), mcp.ListToolsRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.connect(t, "api.github.com", 443); got.Decision != egress.Refuse {
		t.Error("both sessions' profile denies connections, but one went out")
	}
}

// TestConnectOfTwoPrincipalsIsAskedOnlyOnTheApprovalsPage: the newest
// session decides, but its human is not shown a connection that may be
// another principal's doing; the approvals page is asked.
func TestConnectOfTwoPrincipalsIsAskedOnlyOnTheApprovalsPage(t *testing.T) {
	t.Parallel()
	r := &recordingResolver{}
	e := newCatalogEnv(t, connectSpec(rules.PolicySpec{Ask: []string{"mcp:fs:network/connect"}}), Options{Resolvers: []approvals.Resolver{r}})
	var humans []*formHuman
	for _, who := range []string{"token:alice", "token:bob"} {
		h := &formHuman{answer: func(string) string { return "allow_once" }}
		humans = append(humans, h)
		c := e.client(t, client.WithElicitationHandler(h))
		if _, err := c.ListTools(httpguard.ContextWithPrincipal(t.Context(), who), mcp.ListToolsRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.connect(t, "api.github.com", 443); got.Decision != egress.Refuse {
		t.Error("the approvals page denied it, but it went out")
	}
	r.mu.Lock()
	asked := len(r.reqs)
	r.mu.Unlock()
	if asked != 1 || len(humans[0].seen())+len(humans[1].seen()) != 0 {
		t.Errorf("the page was asked %d times, alice shown %q, bob %q; want the page once and neither", asked, humans[0].seen(), humans[1].seen())
	}
}
