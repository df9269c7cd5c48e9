package proxy

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// startingEnv is a proxy whose one upstream, "up", holds every request
// until release is called (at the latest when the test ends), started in
// the background as serve does it.
func startingEnv(t *testing.T) (e *env, release func()) {
	t.Helper()
	held := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(held) }) }
	s := testkit.NewStandIn()
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), testkit.Echo)
	url := s.URL(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-held:
			case <-r.Context().Done():
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	var srv *Server // set before the pool starts, so before any event
	pool := upstream.New(map[string]upstream.Spec{
		"up": {Transport: upstream.TransportHTTP, URL: url},
	}, &upstream.Options{Background: true, OnEvent: func(ev upstream.Event) {
		if ev.Kind == upstream.EventConnected {
			srv.UpstreamChanged(context.Background(), ev.Server)
		}
	}})
	t.Cleanup(func() { pool.Close() })
	p, err := rules.Compile(rules.Spec{Global: allowAll, Servers: map[string]rules.ServerSpec{"up": {}}})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memorySink{}
	srv, err = New(Options{Upstream: pool, Policy: p, Audit: audit.New(sink, audit.Config{}),
		Starting: pool.WaitStarted, StartupDeadline: time.Now().Add(200 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	pool.Start(t.Context(), srv)
	t.Cleanup(release) // first: the server's handlers end
	return &env{pool: pool, srv: srv, sink: sink}, release
}

func TestCallOfAToolNotListedYetWaitsForItsServer(t *testing.T) {
	t.Parallel()
	e, release := startingEnv(t)
	c := e.client(t) // initialize does not wait
	res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 0 {
		t.Errorf("tools/list past the startup deadline, the server still starting: %d tools, want none", len(res.Tools))
	}
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"text": "waited"}}})
		done <- outcome{res, err}
	}()
	time.Sleep(300 * time.Millisecond)
	select {
	case o := <-done:
		t.Fatalf("the call returned before its server was up: %+v, %v", o.res, o.err)
	default:
	}
	release()
	select {
	case o := <-done:
		if o.err != nil || o.res.IsError || !strings.Contains(testkit.Text(o.res), "waited") {
			t.Errorf("the call that waited for its server: %+v, %v", o.res, o.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not end once its server was up")
	}
}

func TestCallOfAToolNoServerHasEndsOnceAllHaveStarted(t *testing.T) {
	t.Parallel()
	e, release := startingEnv(t)
	c := e.client(t)
	release()
	_, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "up__nope"}})
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("a call of a tool no server has: err = %v, want not found", err)
	}
	res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(res.Tools, func(tool mcp.Tool) bool { return tool.Name == "up__echo" }) {
		t.Errorf("tools/list once the server is up lacks up__echo")
	}
}
