package proxy

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// TestBusyAndRestartingRefusalsDoNotSayForwarded: a call refused because
// its upstream is busy (max_concurrent_calls taken, no queue) or is
// restarting was never sent, and the model is told so — not "mcpwarden
// forwarded …, but the upstream failed", which would have it believe the
// call may have had effects.
func TestBusyAndRestartingRefusalsDoNotSayForwarded(t *testing.T) {
	t.Parallel()
	rec := testkit.NewStandIn()
	held, release := make(chan struct{}, 1), make(chan struct{})
	rec.AddTool(mcp.NewTool("hold"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		held <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return mcp.NewToolResultText("held"), nil
	})
	rec.AddTool(mcp.NewTool("echo", mcp.WithString("text")), testkit.Echo)
	var down atomic.Bool
	url := rec.URL(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if down.Load() {
				http.NotFound(w, r) // the session is gone, and no new one starts
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	pool := upstream.Start(t.Context(), map[string]upstream.Spec{
		"up": {Transport: upstream.TransportHTTP, URL: url, MaxConcurrentCalls: 1, MaxQueuedCalls: -1},
	}, nil)
	t.Cleanup(func() { pool.Close() })
	if err := pool.Err("up"); err != nil {
		t.Fatal(err)
	}
	p, err := rules.Compile(rules.Spec{Global: rules.PolicySpec{Default: "allow"}, Servers: map[string]rules.ServerSpec{"up": {}}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Upstream: pool, Policy: p, Audit: audit.New(&memorySink{}, audit.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	adopt(t, srv)
	c := testkit.Connect(t, srv.MCP(), "")
	wantNotForwarded := func(what string, res *mcp.CallToolResult, because string) {
		t.Helper()
		text := testkit.Text(res)
		if !res.IsError || strings.Contains(text, "mcpwarden forwarded") || !strings.Contains(text, "did not forward mcp:up:echo") || !strings.Contains(text, because) {
			t.Errorf("%s: %q; want an error saying mcpwarden did not forward mcp:up:echo because it %s", what, text, because)
		}
	}

	holding := make(chan struct{})
	go func() {
		defer close(holding)
		_, _ = c.CallTool(context.WithoutCancel(t.Context()), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "up__hold"}})
	}()
	<-held
	wantNotForwarded("a call while the upstream is busy", testkit.CallTool(t, c, "up__echo", map[string]any{"text": "x"}), "is busy")
	close(release)
	<-holding

	down.Store(true)
	deadline := time.Now().Add(10 * time.Second)
	for {
		res := testkit.CallTool(t, c, "up__echo", map[string]any{"text": "x"})
		if text := testkit.Text(res); strings.Contains(text, "is restarting") {
			wantNotForwarded("a call while the upstream is restarting", res, "is restarting")
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the upstream never said it is restarting; last answer %q", testkit.Text(res))
		}
	}
	for _, call := range rec.Calls() {
		if call.Tool == "echo" {
			t.Errorf("the upstream ran echo (%v), though every call to it was refused", call)
		}
	}
}
