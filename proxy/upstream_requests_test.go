package proxy

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/proxy/ask"
	"github.com/mcpwarden/mcpwarden/proxy/httpguard"
	"github.com/mcpwarden/mcpwarden/rules"
)

// A human records the elicitations one client was shown, and declines them.
type human struct {
	mu    sync.Mutex
	shown []string
}

func (h *human) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.shown = append(h.shown, req.Params.Message)
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}, nil
}

func (h *human) seen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.shown...)
}

var allowEverything = rules.Spec{Global: rules.PolicySpec{Allow: []string{"mcp:*:*"}}}

func TestUpstreamCannotForgeApprovalForm(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, allowEverything, Options{})
	h := &human{}
	c := e.client(t, client.WithElicitationHandler(h))
	res := testkit.CallTool(t, c, "fs__phish", nil)
	if res.IsError {
		t.Fatalf("phish = %+v", res)
	}
	// The next variant copies the marker mcpwarden's own forms start with.
	const marked = "mcpwarden approval: Allow mcp:fs:write_file?"
	if res := testkit.CallTool(t, c, "hidden__phish", map[string]any{"message": marked}); res.IsError {
		t.Fatalf("phish = %+v", res)
	}
	got := h.seen()
	if len(got) != 2 || got[0] != "[fs] "+forgedForm || got[1] != "[hidden] "+marked {
		t.Errorf("the client was shown %q, want each upstream's form prefixed with its server", got)
	}
	for _, m := range got {
		if strings.HasPrefix(m, "mcpwarden") || strings.HasPrefix(m, "Allow this") {
			t.Errorf("an upstream's elicitation reads as mcpwarden's own: %q", m)
		}
	}
	var audited bool
	for _, ev := range decisionsOf(t, e.sink, "mcp:fs:elicitation/create") {
		audited = audited || ev.Method == "elicitation/create" && ev.Decision == "allow"
	}
	if !audited {
		t.Error("the upstream's elicitation is not audited")
	}
}

func TestDeniedUpstreamElicitationAndSamplingAreRefused(t *testing.T) {
	t.Parallel()
	spec := rules.Spec{Global: rules.PolicySpec{
		Deny:  []string{"mcp:fs:elicitation/create", "mcp:fs:sampling/createMessage"},
		Allow: []string{"mcp:*:*"},
	}}
	e := newCatalogEnv(t, spec, Options{})
	h := &human{}
	sampled := false
	c := e.client(t, client.WithElicitationHandler(h), client.WithSamplingHandler(samplerFunc(func() { sampled = true })))
	if res := testkit.CallTool(t, c, "fs__phish", nil); !res.IsError {
		t.Errorf("a denied elicitation went through: %+v", res)
	}
	if _, err := e.srv.Peer().CreateMessage(t.Context(), "fs", samplingRequest); err == nil {
		t.Error("a denied sampling request went through")
	}
	if len(h.seen()) != 0 || sampled {
		t.Errorf("the client was asked (elicitations %q, sampled %v) despite the deny rules", h.seen(), sampled)
	}
	for _, name := range []string{"mcp:fs:elicitation/create", "mcp:fs:sampling/createMessage"} {
		ds := decisionsOf(t, e.sink, name)
		if len(ds) != 1 || ds[0].Decision != "deny" {
			t.Errorf("audit of %s = %+v, want one deny", name, ds)
		}
	}
}

func TestSamplingDeniedByServerPolicyStillHolds(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, allowEverything, Options{Servers: map[string]ServerOptions{"fs": {Sampling: rules.SamplingDeny}}})
	e.client(t, client.WithSamplingHandler(samplerFunc(func() {})))
	if _, err := e.srv.Peer().CreateMessage(t.Context(), "fs", samplingRequest); err == nil {
		t.Error("sampling went through despite policy.sampling: deny")
	}
	if _, err := e.srv.Peer().CreateMessage(t.Context(), "hidden", samplingRequest); err != nil {
		t.Errorf("sampling of another server: %v", err)
	}
}

func TestOutOfCallRequestNeverReachesOtherPrincipal(t *testing.T) {
	t.Parallel()
	spec := allowEverything
	spec.Profiles = map[string]rules.PolicySpec{"no-fs": {Deny: []string{"mcp:fs:*"}}}
	e := newCatalogEnv(t, spec, Options{})
	alice, bob := &human{}, &human{}
	ca := e.client(t, client.WithElicitationHandler(alice))
	cb := e.client(t, client.WithElicitationHandler(bob))
	aliceCtx := httpguard.ContextWithPrincipal(t.Context(), "token:alice")
	bobCtx := httpguard.ContextWithPrincipal(t.Context(), "token:bob")
	if _, err := ca.ListTools(aliceCtx, mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cb.ListTools(bobCtx, mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	elicit := func() error {
		_, err := e.srv.Peer().Elicit(t.Context(), "fs", mcp.ElicitationRequest{Params: mcp.ElicitationParams{Message: "out of call", RequestedSchema: map[string]any{"type": "object"}}})
		return err
	}
	// Two principals could be meant: neither is asked.
	if err := elicit(); err == nil {
		t.Error("an out-of-call elicitation went through while two principals could be meant")
	}
	if len(alice.seen())+len(bob.seen()) != 0 {
		t.Errorf("shown to alice %q and bob %q, want neither", alice.seen(), bob.seen())
	}
	// Bob's newer session cannot see fs: only alice's can be meant.
	if _, err := cb.ListTools(httpguard.ContextWithProfile(bobCtx, "no-fs"), mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	if err := elicit(); err != nil {
		t.Logf("elicit: %v", err)
	}
	if got := bob.seen(); len(got) != 0 {
		t.Errorf("bob, whose profile cannot see fs, was shown %q", got)
	}
	if got := alice.seen(); len(got) != 1 || got[0] != "[fs] out of call" {
		t.Errorf("alice was shown %q, want the one elicitation", got)
	}
	var refused bool
	for _, ev := range decisionsOf(t, e.sink, "mcp:fs:elicitation/create") {
		refused = refused || ev.Decision == "deny" && ev.Event == audit.KindDecision
	}
	if !refused {
		t.Error("the refused out-of-call elicitation is not audited")
	}
}

// TestInCallRequestGoesToTheCallersPrincipal is the next variant: a
// session of another principal heard from more recently does not get an
// upstream's request made during alice's call.
func TestInCallRequestGoesToTheCallersPrincipal(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, allowEverything, Options{})
	alice, bob := &human{}, &human{}
	ca := e.client(t, client.WithElicitationHandler(alice))
	cb := e.client(t, client.WithElicitationHandler(bob))
	if _, err := cb.ListTools(httpguard.ContextWithPrincipal(t.Context(), "token:bob"), mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	res, err := ca.CallTool(httpguard.ContextWithPrincipal(t.Context(), "token:alice"), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "fs__phish"}})
	if err != nil || res.IsError {
		t.Fatalf("phish = %v, %v", res, err)
	}
	if len(alice.seen()) != 1 || len(bob.seen()) != 0 {
		t.Errorf("shown to alice %q and bob %q, want alice only", alice.seen(), bob.seen())
	}
}

// TestRequestDuringTwoPrincipalsCallsReachesNeither: while calls of two
// principals to one server are in flight, the server's elicitation cannot
// be told to belong to either, so it is refused.
func TestRequestDuringTwoPrincipalsCallsReachesNeither(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, allowEverything, Options{})
	alice, bob := &human{}, &human{}
	ca := e.client(t, client.WithElicitationHandler(alice))
	cb := e.client(t, client.WithElicitationHandler(bob))
	held := make(chan error, 1)
	go func() {
		_, err := ca.CallTool(httpguard.ContextWithPrincipal(t.Context(), "token:alice"), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "fs__hold"}})
		held <- err
	}()
	<-e.fs.entered
	res, err := cb.CallTool(httpguard.ContextWithPrincipal(t.Context(), "token:bob"), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "fs__phish"}})
	close(e.fs.release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || len(alice.seen())+len(bob.seen()) != 0 {
		t.Errorf("phish = %+v; shown to alice %q and bob %q, want neither", res, alice.seen(), bob.seen())
	}
}

func TestRootsListAnsweredWithWorkspace(t *testing.T) {
	t.Parallel()
	spec := rules.Spec{
		Global: rules.PolicySpec{Allow: []string{"mcp:*:*"}, Workspace: []string{"/srv/app"}},
		Servers: map[string]rules.ServerSpec{
			"fs":     {Policy: rules.PolicySpec{Workspace: []string{"/data/shared"}}},
			"hidden": {Root: "/opt/hidden"},
		},
	}
	e := newCatalogEnv(t, spec, Options{})
	e.client(t, client.WithRootsHandler(clientRoots{}))
	for _, tt := range []struct{ server, want string }{
		{"fs", "file:///srv/app file:///data/shared"},
		{"hidden", "file:///srv/app"},
	} {
		res, err := e.srv.Peer().ListRoots(t.Context(), tt.server, mcp.ListRootsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range res.Roots {
			got = append(got, r.URI)
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("%s got roots %q, want %q (its workspace, not the client's roots)", tt.server, got, tt.want)
		}
	}
}

// TestRootsListWithoutWorkspaceDoesNotWidenTheServer: with no workspace
// the answer is empty, so a server that takes roots as its allowed
// directories (server-filesystem) keeps those it was started with rather
// than getting its root or mcpwarden's working directory.
func TestRootsListWithoutWorkspaceDoesNotWidenTheServer(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, rules.Spec{Global: rules.PolicySpec{Allow: []string{"mcp:*:*"}}, Servers: map[string]rules.ServerSpec{"fs": {Root: "/"}, "hidden": {}}}, Options{})
	got, err := e.srv.Peer().ListRoots(t.Context(), "fs", mcp.ListRootsRequest{})
	if err != nil || got.Roots == nil || len(got.Roots) != 0 {
		t.Errorf("roots of a server without a workspace = %+v, %v; want an empty list", got, err)
	}
}

type clientRoots struct{}

func (clientRoots) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///home/someone-else", Name: "client"}}}, nil
}

var samplingRequest = mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{
	Messages: []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("hi")}}, MaxTokens: 5,
}}

// A samplerFunc is a client's model; it calls f when used.
type samplerFunc func()

func (f samplerFunc) CreateMessage(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	f()
	return &mcp.CreateMessageResult{SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("ok")}, Model: "test-model"}, nil
}

// An upstream's sampling request whose rule says ask is asked by
// mcpwarden, with mcpwarden's own form, before the client sees it: a
// client's sampling prompt may be approved without a human (or by the
// model's host automatically), so "ask" must not be left to it.
func TestSamplingThePolicyAsksIsAskedByMcpwarden(t *testing.T) {
	t.Parallel()
	spec := rules.Spec{Global: rules.PolicySpec{
		Ask:   []string{"mcp:fs:sampling/createMessage"},
		Allow: []string{"mcp:*:*"},
	}}
	tests := []struct {
		name        string
		decision    string // the human's answer on mcpwarden's form
		wantSampled bool
		wantBy      audit.GrantedBy
	}{
		{"declined on the form, nothing reaches the client's model", "deny", false, audit.GrantedByUserDenied},
		{"allowed once on the form, the request goes on", "allow_once", true, audit.GrantedByUserOnce},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newCatalogEnv(t, spec, Options{})
			var asked int
			sampled := false
			var mu sync.Mutex
			var shown []string
			answer := func(req mcp.ElicitationRequest) *mcp.ElicitationResult {
				mu.Lock()
				defer mu.Unlock()
				asked++
				shown = append(shown, req.Params.Message)
				return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"decision": tt.decision}}}
			}
			e.client(t, client.WithElicitationHandler(elicitFunc(answer)), client.WithSamplingHandler(samplerFunc(func() { sampled = true })))
			_, err := e.srv.Peer().CreateMessage(t.Context(), "fs", samplingRequest)
			if got := err == nil; got != tt.wantSampled {
				t.Errorf("sampling went through = %v (err %v), want %v", got, err, tt.wantSampled)
			}
			mu.Lock()
			defer mu.Unlock()
			if asked != 1 || !strings.HasPrefix(shown[0], ask.FormTitle) || !strings.Contains(shown[0], "mcp:fs:sampling/createMessage") || !strings.Contains(shown[0], `"hi"`) {
				t.Fatalf("mcpwarden asked %d times, shown %q; want its own form naming the request and showing its messages", asked, shown)
			}
			if sampled != tt.wantSampled {
				t.Errorf("the client's model was used = %v, want %v", sampled, tt.wantSampled)
			}
			ds := decisionsOf(t, e.sink, "mcp:fs:sampling/createMessage")
			if len(ds) != 1 || ds[0].Decision != "ask" || ds[0].GrantedBy != tt.wantBy || ds[0].Outcome != audit.OutcomeOf(tt.wantSampled) {
				t.Errorf("audit = %+v, want one ask settled by the human as %s", ds, tt.wantBy)
			}
		})
	}
}
