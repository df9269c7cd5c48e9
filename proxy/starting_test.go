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
// the background as serve does it, with a startup deadline 200ms away.
func startingEnv(t *testing.T) (e *env, release func()) {
	t.Helper()
	return startingEnvFor(t, 200*time.Millisecond)
}

// startingEnvFor is startingEnv with the startup deadline wait away.
func startingEnvFor(t *testing.T, wait time.Duration) (e *env, release func()) {
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
		Starting: pool.WaitStarted, StartupDeadline: time.Now().Add(wait)})
	if err != nil {
		t.Fatal(err)
	}
	pool.Start(t.Context(), srv.Peer())
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

// callInBackground calls up__echo and sends what it got on the channel.
func callInBackground(t *testing.T, e *env) <-chan string {
	t.Helper()
	c := e.client(t)
	done := make(chan string, 1)
	go func() {
		res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"text": "waited"}}})
		switch {
		case err != nil:
			done <- "error: " + err.Error()
		case res.IsError:
			done <- "isError: " + testkit.Text(res)
		default:
			done <- testkit.Text(res)
		}
	}()
	time.Sleep(300 * time.Millisecond) // it waits for its server
	return done
}

func TestCallWaitingForItsServerAtShutdownIsDrained(t *testing.T) {
	t.Parallel()
	e, release := startingEnv(t)
	done := callInBackground(t, e)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		e.srv.Drain(ctx)
	}()
	time.Sleep(200 * time.Millisecond)
	select {
	case <-drained:
		t.Fatal("shutdown did not wait for the call waiting for its server")
	default:
	}
	release()
	select {
	case got := <-done:
		if got != "waited" {
			t.Errorf("the call waiting at shutdown got %q, want it to complete", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not end")
	}
	select {
	case <-drained:
	case <-time.After(5 * time.Second):
		t.Error("shutdown did not end once the call had")
	}
}

func TestCallWaitingForItsServerIsCancelledAtTheEndOfTheGrace(t *testing.T) {
	t.Parallel()
	e, _ := startingEnv(t)
	done := callInBackground(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	e.srv.Drain(ctx)
	select {
	case got := <-done:
		if !strings.Contains(got, "mcpwarden is shutting down") {
			t.Errorf("the call still waiting at the end of the grace got %q, want it cancelled as shutting down", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call was not cancelled")
	}
	if took := time.Since(began); took > 3*time.Second {
		t.Errorf("Drain took %s with a 300ms grace", took)
	}
}
