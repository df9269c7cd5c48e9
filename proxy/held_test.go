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
	"github.com/mcpwarden/mcpwarden/proxy/streamable"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// handshakeAskingEnv is a proxy under global with options o, served over
// streamable HTTP at the returned URL, in front of "up", an upstream of
// the handshake whose tools ask the client within the call: confirm an
// elicitation, twice two in a row, sample a sampling request; each
// answers with what it got; slow waits until it is cancelled. ended
// receives each call's end.
func handshakeAskingEnv(t *testing.T, global rules.PolicySpec, o Options) (srv *Server, url string, sink *memorySink, ended <-chan string) {
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
	h, _, err := streamable.NewHandler(httpHost(srv), "127.0.0.1:0", streamable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return srv, ts.URL + streamable.EndpointPath, sink, ends
}

func TestModernClientAnswersAHandshakeUpstreamsElicitationThroughItsRetry(t *testing.T) {
	t.Parallel()
	_, url, sink, _ := handshakeAskingEnv(t, allowAll, Options{})
	h := &human{}
	c := modernClient(t, url, client.WithElicitationHandler(h))
	res := testkit.CallTool(t, c, "up__confirm", map[string]any{"text": "x"})
	if got := testkit.Text(res); res.IsError || got != "answered decline" {
		t.Errorf("confirm = %q (isError %v), want the upstream's answer to the client's decline", got, res.IsError)
	}
	if got := h.seen(); !slices.Equal(got, []string{"[up] proceed?"}) {
		t.Errorf("the client was shown %q, want the upstream's request marked as the server's", got)
	}
	if ev := decisionsOf(t, sink, "mcp:up:elicitation/create"); len(ev) != 1 || ev[0].Decision != "allow" {
		t.Errorf("decisions = %+v, want the elicitation decided and allowed once", ev)
	}
	if calls := decisionsOf(t, sink, "mcp:up:confirm"); len(calls) != 1 {
		t.Errorf("the call's decisions = %+v, want one: the retry goes on with the call that was decided", calls)
	}
}

func TestModernClientAnswersEveryRequestOfAHandshakeUpstreamThatAsksTwice(t *testing.T) {
	t.Parallel()
	_, url, _, _ := handshakeAskingEnv(t, allowAll, Options{})
	h := &human{}
	c := modernClient(t, url, client.WithElicitationHandler(h))
	if got := testkit.Text(testkit.CallTool(t, c, "up__twice", nil)); got != "decline then decline" {
		t.Errorf("twice = %q", got)
	}
	if got := h.seen(); !slices.Equal(got, []string{"[up] one?", "[up] two?"}) {
		t.Errorf("the client was shown %q", got)
	}
}

func TestHandshakeUpstreamsSamplingTheRulesAskAboutIsNotPutToAModernClientsModel(t *testing.T) {
	t.Parallel()
	_, url, _, _ := handshakeAskingEnv(t, rules.PolicySpec{Allow: []string{"mcp:up:sample"}, Ask: []string{"mcp:up:sampling/createMessage"}}, Options{})
	c := modernClient(t, url, client.WithSamplingHandler(countingSampler{t}))
	res := testkit.CallTool(t, c, "up__sample", nil)
	if got := testkit.Text(res); !res.IsError || !strings.Contains(got, "retrying its call") {
		t.Errorf("sample = %q (isError %v), want the upstream told why its request was refused", got, res.IsError)
	}
}

func TestHandshakeUpstreamsAllowedSamplingReachesAModernClient(t *testing.T) {
	t.Parallel()
	_, url, _, _ := handshakeAskingEnv(t, rules.PolicySpec{Allow: []string{"mcp:up:*"}}, Options{})
	c := modernClient(t, url, client.WithSamplingHandler(answeringSampler{}))
	if got := testkit.Text(testkit.CallTool(t, c, "up__sample", nil)); got != "sampled" {
		t.Errorf("sample = %q, want the client's sampling result", got)
	}
}

func TestHeldCallIsCancelledWhenTheClientNeverRetries(t *testing.T) {
	t.Parallel()
	_, url, sink, ended := handshakeAskingEnv(t, allowAll, Options{AskTimeout: 300 * time.Millisecond})
	c := modernClient(t, url, client.WithElicitationHandler(&human{}))
	askedState(t, c, "never answered", "upstream:1") // and no retry comes
	select {
	case got := <-ended:
		if !strings.HasPrefix(got, "failed") {
			t.Errorf("the upstream's elicitation got %q, want it to fail", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the held call was never ended")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		var results []audit.Event
		for _, e := range sink.events(t) {
			if e.Event == audit.KindResult && e.Tool == "mcp:up:confirm" && strings.Contains(e.Error, "did not answer") {
				results = append(results, e)
			}
		}
		if len(results) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("results = %+v, want the abandoned call's result recorded once", results)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestHeldRequestStateAttacks(t *testing.T) {
	t.Parallel()
	_, url, sink, ended := handshakeAskingEnv(t, allowAll, Options{})
	c := modernClient(t, url, client.WithElicitationHandler(&human{}))
	answer := map[string]any{"upstream:1": map[string]any{"action": "decline"}}
	tests := []struct {
		name  string
		retry func(t *testing.T) *mcp.CallToolResult
		want  string
	}{
		{"a state carried to other arguments", func(t *testing.T) *mcp.CallToolResult {
			return rawCall(t, c, "up__confirm", map[string]any{"text": "other"}, askedState(t, c, "a", "upstream:1"), answer)
		}, "issued for another call"},
		{"a state carried to another tool", func(t *testing.T) *mcp.CallToolResult {
			return rawCall(t, c, "up__twice", nil, askedState(t, c, "a", "upstream:1"), answer)
		}, "issued for another call"},
		{"a retry that leaves the request unanswered", func(t *testing.T) *mcp.CallToolResult {
			return rawCall(t, c, "up__confirm", map[string]any{"text": "a"}, askedState(t, c, "a", "upstream:1"), map[string]any{})
		}, "does not answer every input request"},
		{"a forged state", func(t *testing.T) *mcp.CallToolResult {
			return rawCall(t, c, "up__confirm", map[string]any{"text": "a"}, "held.AAAAAAAAAAAAAAAAAAAAAAAAAA", answer)
		}, "not one mcpwarden has pending"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := tt.retry(t)
			if !res.IsError || !strings.Contains(testkit.Text(res), tt.want) || !strings.Contains(testkit.Text(res), "nothing was forwarded") {
				t.Errorf("the retry = %q (isError %v), want it refused: %q", testkit.Text(res), res.IsError, tt.want)
			}
		})
	}
	// Each held call whose state was misused is cancelled: its upstream's
	// request fails rather than waiting for an answer that cannot come.
	for range len(tests) - 1 { // the forged state held no call
		select {
		case got := <-ended:
			if !strings.HasPrefix(got, "failed") {
				t.Errorf("a held call's elicitation got %q, want it to fail", got)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a held call whose state was misused was never ended")
		}
	}
	refused := 0
	for _, e := range sink.events(t) {
		if e.Event == audit.KindDecision && e.Rule == requestStateRule && e.Decision == "deny" {
			refused++
		}
	}
	if refused != len(tests) {
		t.Errorf("%d refusals audited under %s, want %d", refused, requestStateRule, len(tests))
	}
}

func TestHeldCallCutByShutdownSaysMcpwardenIsShuttingDown(t *testing.T) {
	t.Parallel()
	srv, url, sink, ended := handshakeAskingEnv(t, allowAll, Options{})
	c := modernClient(t, url, client.WithElicitationHandler(&human{}))
	got := make(chan *mcp.CallToolResult, 1)
	go func() { got <- testkit.CallTool(t, c, "up__slow", nil) }()
	testkit.Eventually(t, 10*time.Second, "the call in flight", func() bool {
		for _, e := range sink.events(t) {
			if e.Event == audit.KindDecision && e.Tool == "mcp:up:slow" {
				return true
			}
		}
		return false
	})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	srv.Drain(ctx)
	if res := <-got; !res.IsError || !strings.Contains(testkit.Text(res), "shutting down") {
		t.Errorf("the call cut by shutdown = %q, want it to say mcpwarden is shutting down", testkit.Text(res))
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream's call was never cancelled")
	}
	testkit.Eventually(t, 5*time.Second, "the result recorded as cut by shutdown", func() bool {
		for _, e := range sink.events(t) {
			if e.Event == audit.KindResult && e.Tool == "mcp:up:slow" {
				return strings.Contains(e.Error, "shutting down")
			}
		}
		return false
	})
}
