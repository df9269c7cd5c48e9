package proxy

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// handshakeAskingEnv is the askingProxy of an upstream of the handshake,
// which asks with requests of its own within the call, and whose tool
// slow waits until it is cancelled. ended receives what each call's
// requests got as it ends ("cancelled" for slow).
func handshakeAskingEnv(t *testing.T, global rules.PolicySpec, o Options) askingProxy {
	t.Helper()
	up := server.NewMCPServer("handshake", "1.0", server.WithToolCapabilities(false))
	ends := make(chan string, 16)
	elicit := func(ctx context.Context, msg string) string {
		res, err := up.RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{Message: msg, RequestedSchema: map[string]any{"type": "object"}}})
		if err != nil {
			return "failed: " + err.Error()
		}
		return string(res.Action)
	}
	up.AddTool(mcp.NewTool("confirm", mcp.WithString("text")), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		got := elicit(ctx, "proceed?")
		ends <- got
		return mcp.NewToolResultText("answered " + got), nil
	})
	up.AddTool(mcp.NewTool("twice"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(elicit(ctx, "one?") + " then " + elicit(ctx, "two?")), nil
	})
	up.AddTool(mcp.NewTool("sample"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := up.RequestSampling(ctx, mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{MaxTokens: 5, Messages: []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("hi")}}}})
		if err != nil {
			return mcp.NewToolResultError("sampling failed: " + err.Error()), nil
		}
		return mcp.NewToolResultText(mcp.GetTextFromContent(res.Content)), nil
	})
	up.AddTool(mcp.NewTool("slow"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		ends <- "cancelled"
		return nil, ctx.Err()
	})
	hs := httptest.NewServer(server.NewStreamableHTTPServer(up))
	t.Cleanup(hs.Close)
	srv, pool, sink := proxyWith(t, upstream.Spec{Transport: upstream.TransportHTTP, URL: hs.URL + "/mcp"}, global, o)
	if got := pool.Protocol("up"); mcp.IsModernProtocol(got) {
		t.Fatalf("the upstream speaks %q, want the handshake", got)
	}
	return askingProxy{srv: srv, url: serveHTTP(t, srv), sink: sink, ended: ends}
}

func TestHeldCallIsCancelledWhenTheClientNeverRetries(t *testing.T) {
	t.Parallel()
	p := handshakeAskingEnv(t, allowAll, Options{AskTimeout: 300 * time.Millisecond})
	c := modernClient(t, p.url, client.WithElicitationHandler(&human{}))
	askedState(t, c, askingKinds[1], "never answered") // and no retry comes
	expectEnds(t, p.ended, "failed")
	testkit.Eventually(t, 5*time.Second, "the abandoned call's result recorded once", func() bool {
		n := 0
		for _, e := range resultsOf(t, p.sink, "mcp:up:confirm") {
			if strings.Contains(e.Error, "did not answer") {
				n++
			}
		}
		return n == 1
	})
}

func TestHeldCallCutByShutdownSaysMcpwardenIsShuttingDown(t *testing.T) {
	t.Parallel()
	p := handshakeAskingEnv(t, allowAll, Options{})
	c := modernClient(t, p.url, client.WithElicitationHandler(&human{}))
	got := make(chan *mcp.CallToolResult, 1)
	go func() { got <- testkit.CallTool(t, c, "up__slow", nil) }()
	testkit.Eventually(t, 10*time.Second, "the call in flight", func() bool { return len(decisionsOf(t, p.sink, "mcp:up:slow")) == 1 })
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	p.srv.Drain(ctx)
	if res := <-got; !res.IsError || !strings.Contains(testkit.Text(res), "shutting down") {
		t.Errorf("the call cut by shutdown = %q, want it to say mcpwarden is shutting down", testkit.Text(res))
	}
	expectEnds(t, p.ended, "cancelled")
	testkit.Eventually(t, 5*time.Second, "the result recorded as cut by shutdown", func() bool {
		results := resultsOf(t, p.sink, "mcp:up:slow")
		return len(results) == 1 && strings.Contains(results[0].Error, "shutting down")
	})
}

func TestModernClientThatCannotBeAskedIsNotHeld(t *testing.T) {
	t.Parallel()
	p := handshakeAskingEnv(t, allowAll, Options{})
	c := modernClient(t, p.url) // declares neither elicitation nor sampling
	res := testkit.CallTool(t, c, "up__confirm", nil)
	if got := testkit.Text(res); !strings.HasPrefix(got, "answered failed") {
		t.Errorf("confirm = %q, want the upstream's request refused at once", got)
	}
	for _, e := range resultsOf(t, p.sink, "mcp:up:confirm") {
		if strings.Contains(e.Detail, "asked for input") {
			t.Errorf("a client that cannot be asked was relayed the upstream's request: %+v", e)
		}
	}
}

func TestShutdownEndsHeldCallsWaitingForARetry(t *testing.T) {
	t.Parallel()
	p := handshakeAskingEnv(t, allowAll, Options{})
	c := modernClient(t, p.url, client.WithElicitationHandler(&human{}))
	state := askedState(t, c, askingKinds[1], "waits") // and shutdown comes before the retry
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	p.srv.Drain(ctx)
	expectEnds(t, p.ended, "failed")
	p.srv.Close() // the held call's result is recorded by then
	results := resultsOf(t, p.sink, "mcp:up:confirm")
	if n := len(results); n != 2 || !strings.Contains(results[1].Error, "shutting down") {
		t.Errorf("results = %+v, want the round that asked and the call's end, saying mcpwarden is shutting down", results)
	}
	// The retry that comes too late is refused: mcpwarden is shutting down.
	if res := rawCall(t, c, "up__confirm", map[string]any{"text": "waits"}, state, map[string]any{"upstream:1": map[string]any{"action": "accept"}}); !res.IsError {
		t.Errorf("a retry after shutdown = %q, want it refused", testkit.Text(res))
	}
}
