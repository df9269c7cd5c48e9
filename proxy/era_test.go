package proxy

import (
	"context"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// modernEnv is a proxy in front of "up", an upstream of protocol
// 2026-07-28 alone whose tool confirm asks the client, through a multi
// round-trip result, to confirm, and answers with the action taken.
func modernEnv(t *testing.T) (*Server, *server.MCPServer, *memorySink) {
	t.Helper()
	up := server.NewMCPServer("modern", "1.0", server.WithToolCapabilities(true))
	up.AddTool(mcp.NewTool("confirm"), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if ans := server.ElicitationResponse(req.Params.InputResponses, "ok"); ans != nil {
			return mcp.NewToolResultText("answered " + string(ans.Action)), nil
		}
		return server.NewInputRequestBuilder("state-1").Elicit("ok", mcp.ElicitationParams{Message: "proceed?", RequestedSchema: map[string]any{"type": "object"}}).ToolResult(), nil
	})
	up.AddTool(mcp.NewTool("echo", mcp.WithString("text")), testkit.Echo)
	hs := httptest.NewServer(testkit.Refusing(server.NewStreamableHTTPServer(up), mcp.MethodInitialize))
	t.Cleanup(hs.Close)
	srv, pool, sink := proxyFor(t, upstream.Spec{Transport: upstream.TransportHTTP, URL: hs.URL + "/mcp"}, allowAll)
	if got := pool.Protocol("up"); got != mcp.ProtocolVersion20260728 {
		t.Fatalf("the upstream speaks %q, want %s", got, mcp.ProtocolVersion20260728)
	}
	return srv, up, sink
}

func TestModernUpstreamsMidCallElicitationReachesTheCaller(t *testing.T) {
	t.Parallel()
	srv, _, sink := modernEnv(t)
	h := &human{}
	c := testkit.Connect(t, srv.MCP(), "2025-11-25", client.WithElicitationHandler(h), client.WithLegacyProtocolOnly())
	res := testkit.CallTool(t, c, "up__confirm", nil)
	if got := testkit.Text(res); res.IsError || got != "answered decline" {
		t.Errorf("confirm = %q (isError %v), want the upstream's answer to the client's decline", got, res.IsError)
	}
	if got := h.seen(); !slices.Equal(got, []string{"[up] proceed?"}) {
		t.Errorf("the client was shown %q, want the upstream's request marked as the server's", got)
	}
	if ev := decisionsOf(t, sink, "mcp:up:elicitation/create"); len(ev) != 1 || ev[0].Decision != "allow" {
		t.Errorf("decisions = %+v, want the elicitation decided and allowed once", ev)
	}
	// A plain call's result is still forwarded as sent.
	if got := testkit.Text(testkit.CallTool(t, c, "up__echo", map[string]any{"text": "hi"})); got != "hi" {
		t.Errorf("echo = %q", got)
	}
}

func TestModernUpstreamToolsListChangedReachesTheClient(t *testing.T) {
	t.Parallel()
	srv, up, _ := modernEnv(t)
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
	// A server of 2026-07-28 sends it only on a subscriptions/listen stream.
	testkit.Eventually(t, 10*time.Second, "up__added listed", func() bool {
		up.AddTool(mcp.NewTool("added"), testkit.Reply("new"))
		res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
		return err == nil && slices.ContainsFunc(res.Tools, func(tool mcp.Tool) bool { return tool.Name == "up__added" })
	})
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the client was never told the tools changed")
	}
}
