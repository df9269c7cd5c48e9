package proxy

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// A pushingUpstream is an in-process upstream over streamable HTTP, of
// the initialize handshake (protocol 2025-11-25), that sends requests and notifications outside any call, as SDK servers do on
// the standalone GET stream: sessions holds the mcp-go sessions of the
// clients it has (mcpwarden's).
type pushingUpstream struct {
	srv      *server.MCPServer
	sessions chan server.ClientSession
}

func newPushingUpstream(t *testing.T, opts ...server.ServerOption) (*pushingUpstream, upstream.Spec) {
	t.Helper()
	u := &pushingUpstream{sessions: make(chan server.ClientSession, 4)}
	hooks := &server.Hooks{}
	hooks.AddOnRegisterSession(func(_ context.Context, s server.ClientSession) { u.sessions <- s })
	u.srv = server.NewMCPServer("pusher", "1.0", append([]server.ServerOption{server.WithToolCapabilities(true), server.WithLogging(), server.WithHooks(hooks)}, opts...)...)
	u.srv.AddTool(mcp.NewTool("echo", mcp.WithString("text")), testkit.Echo)
	hs := httptest.NewServer(server.NewStreamableHTTPServer(u.srv))
	t.Cleanup(hs.Close)
	return u, upstream.Spec{Transport: upstream.TransportHTTP, URL: hs.URL + "/mcp"}
}

// session is the upstream's session of mcpwarden, as a context to send on.
func (u *pushingUpstream) session(t *testing.T) context.Context {
	t.Helper()
	select {
	case s := <-u.sessions:
		return u.srv.WithContext(t.Context(), s)
	case <-time.After(10 * time.Second):
		t.Fatal("mcpwarden never opened a session with the upstream")
		return nil
	}
}

// pushEnv is a proxy in front of one pushingUpstream, "up", with the
// global policy global.
func pushEnv(t *testing.T, global rules.PolicySpec) (*Server, *pushingUpstream, *memorySink) {
	t.Helper()
	u, spec := newPushingUpstream(t)
	srv, _, sink := proxyFor(t, spec, global)
	return srv, u, sink
}

// proxyFor is a proxy in front of one upstream, "up", with the global
// policy global, that re-reads its tools when they change, as app does.
func proxyFor(t *testing.T, spec upstream.Spec, global rules.PolicySpec) (*Server, *upstream.Pool, *memorySink) {
	t.Helper()
	return proxyWith(t, spec, global, Options{})
}

// proxyWith is proxyFor with the options o (its Upstream, Policy and
// Audit are set here).
func proxyWith(t *testing.T, spec upstream.Spec, global rules.PolicySpec, o Options) (*Server, *upstream.Pool, *memorySink) {
	t.Helper()
	var srv *Server // set before the pool starts, so before any event
	pool := upstream.New(map[string]upstream.Spec{"up": spec}, &upstream.Options{OnEvent: func(e upstream.Event) {
		if e.Kind == upstream.EventToolsChanged {
			srv.UpstreamChanged(context.Background(), e.Server)
		}
	}})
	t.Cleanup(func() { pool.Close() })
	p, err := rules.Compile(rules.Spec{Global: global, Servers: map[string]rules.ServerSpec{"up": {}}})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memorySink{}
	o.Upstream, o.Policy, o.Audit = pool, p, audit.New(sink, audit.Config{})
	srv, err = New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	pool.Start(t.Context(), srv.Peer())
	if err := pool.Err("up"); err != nil {
		t.Fatal(err)
	}
	adopt(t, srv)
	return srv, pool, sink
}

func TestHTTPUpstreamElicitationOutsideACallReachesTheClient(t *testing.T) {
	t.Parallel()
	srv, u, sink := pushEnv(t, allowAll)
	up := u.session(t)
	h := &human{}
	c := testkit.Connect(t, srv.MCP(), "2025-11-25", client.WithElicitationHandler(h), client.WithLegacyProtocolOnly())
	if err := c.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	// No call is in flight: the request can only travel on the GET stream.
	ctx, cancel := context.WithTimeout(up, 10*time.Second)
	defer cancel()
	res, err := u.srv.RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{Message: "out of call", RequestedSchema: map[string]any{"type": "object"}}})
	if err != nil {
		t.Fatalf("the upstream's elicitation outside a call: %v", err)
	}
	if res.Action != mcp.ElicitationResponseActionDecline {
		t.Errorf("the upstream got %q, want the client's decline", res.Action)
	}
	if got := h.seen(); !slices.Equal(got, []string{"[up] out of call"}) {
		t.Errorf("the client was shown %q, want the one elicitation marked as the server's", got)
	}
	if ev := decisionsOf(t, sink, "mcp:up:elicitation/create"); len(ev) != 1 || ev[0].Decision != "allow" {
		t.Errorf("decisions = %+v, want the elicitation decided and allowed once", ev)
	}
}

func TestHTTPUpstreamSamplingOutsideACallIsDecided(t *testing.T) {
	t.Parallel()
	_, u, sink := pushEnv(t, allowAll)
	up := u.session(t)
	// No client session can see the server yet: refused, and audited.
	ctx, cancel := context.WithTimeout(up, 10*time.Second)
	defer cancel()
	_, err := u.srv.RequestSampling(ctx, mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{MaxTokens: 1, Messages: []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("hi")}}}})
	if err == nil {
		t.Fatal("a sampling request with no client to ask was answered")
	}
	if ev := decisionsOf(t, sink, "mcp:up:sampling/createMessage"); len(ev) != 1 || ev[0].Decision != "deny" {
		t.Errorf("decisions = %+v, want the sampling request refused and audited (err %v)", ev, err)
	}
}

func TestHTTPUpstreamToolsListChangedOnTheGetStreamReachesTheClient(t *testing.T) {
	t.Parallel()
	srv, u, _ := pushEnv(t, allowAll)
	u.session(t)
	changed := make(chan struct{}, 4)
	c := testkit.Connect(t, srv.MCP(), "2025-11-25", client.WithLegacyProtocolOnly())
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) {
			changed <- struct{}{}
		}
	})
	if err := c.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Outside any call: mcp-go's server sends tools/list_changed to every
	// session, on its GET stream.
	u.srv.AddTool(mcp.NewTool("added"), testkit.Reply("new"))
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the client was never told the tools changed")
	}
	testkit.Eventually(t, 10*time.Second, "up__added listed", func() bool {
		res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
		return err == nil && slices.ContainsFunc(res.Tools, func(tool mcp.Tool) bool { return tool.Name == "up__added" })
	})
}

func TestHTTPUpstreamLogMessageOnTheGetStreamReachesTheClient(t *testing.T) {
	t.Parallel()
	srv, u, _ := pushEnv(t, allowAll)
	up := u.session(t)
	logged := make(chan string, 4)
	c := testkit.Connect(t, srv.MCP(), "2025-11-25", client.WithLegacyProtocolOnly())
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationMessage) {
			logged <- mustJSON(t, n.Params.AdditionalFields)
		}
	})
	if err := c.SetLevel(t.Context(), mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: mcp.LoggingLevelDebug}}); err != nil {
		t.Fatal(err)
	}
	if err := u.srv.SendLogMessageToClient(up, mcp.NewLoggingMessageNotification(mcp.LoggingLevelWarning, "pusher", "disk almost full")); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-logged:
		if !strings.Contains(got, "disk almost full") {
			t.Errorf("the client was sent %s, want the upstream's log message", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream's log message outside a call never reached the client")
	}
}

func TestHTTPUpstreamRootsListOutsideACallIsAnsweredWithTheWorkspace(t *testing.T) {
	t.Parallel()
	_, u, _ := pushEnv(t, rules.PolicySpec{Allow: []string{"mcp:up:*"}, Workspace: []string{"/srv/app"}})
	up := u.session(t)
	ctx, cancel := context.WithTimeout(up, 10*time.Second)
	defer cancel()
	res, err := u.srv.RequestRoots(ctx, mcp.ListRootsRequest{})
	if err != nil {
		t.Fatalf("the upstream's roots/list outside a call: %v", err)
	}
	if len(res.Roots) != 1 || res.Roots[0].URI != "file:///srv/app" {
		t.Errorf("roots = %+v, want the workspace", res.Roots)
	}
}

func TestReloadChangingTheWorkspaceTellsTheUpstreamItsRootsChanged(t *testing.T) {
	t.Parallel()
	u, spec := newPushingUpstream(t)
	changed := make(chan struct{}, 4)
	u.srv.AddNotificationHandler(mcp.MethodNotificationRootsListChanged, func(context.Context, mcp.JSONRPCNotification) { changed <- struct{}{} })
	srv, _, _ := proxyFor(t, spec, rules.PolicySpec{Allow: []string{"mcp:up:*"}, Workspace: []string{"/srv/app"}})
	reload := func(dirs ...string) {
		p, err := rules.Compile(rules.Spec{Global: rules.PolicySpec{Allow: []string{"mcp:up:*"}, Workspace: dirs}, Servers: map[string]rules.ServerSpec{"up": {}}})
		if err != nil {
			t.Fatal(err)
		}
		srv.Reload(t.Context(), Settings{Policy: p}, nil)
	}
	// The same workspace: nothing to tell.
	reload("/srv/app")
	select {
	case <-changed:
		t.Error("the upstream was told its roots changed by a reload that kept them")
	case <-time.After(200 * time.Millisecond):
	}
	reload("/srv/other")
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("a reload that changed the workspace never told the upstream its roots changed")
	}
}
