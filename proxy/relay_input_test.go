package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/proxy/streamable"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// askingEnv is a proxy under global, served over streamable HTTP at the
// returned URL, in front of "up", an upstream of 2026-07-28 alone whose
// tools ask for input by multi round-trip results: confirm an elicitation,
// sample a sampling request, roots the roots (answered with what it got),
// and twice two elicitations, one round after the other.
func askingEnv(t *testing.T, global rules.PolicySpec) (string, *memorySink) {
	t.Helper()
	up := server.NewMCPServer("modern", "1.0", server.WithToolCapabilities(false))
	elicit := func(state, id, msg string) *mcp.CallToolResult {
		return server.NewInputRequestBuilder(state).Elicit(id, mcp.ElicitationParams{Message: msg, RequestedSchema: map[string]any{"type": "object"}}).ToolResult()
	}
	up.AddTool(mcp.NewTool("confirm", mcp.WithString("text")), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if ans := server.ElicitationResponse(req.Params.InputResponses, "ok"); ans != nil && req.Params.RequestState == "state-1" {
			return mcp.NewToolResultText("answered " + string(ans.Action)), nil
		}
		return elicit("state-1", "ok", "proceed?"), nil
	})
	up.AddTool(mcp.NewTool("twice"), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		switch req.Params.RequestState {
		case "":
			return elicit("after-one", "first", "one?"), nil
		case "after-one":
			return elicit("after-two", "second", "two?"), nil
		}
		return mcp.NewToolResultText("both answered"), nil
	})
	up.AddTool(mcp.NewTool("sample"), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r, ok := req.Params.InputResponses["s"]; ok {
			b, _ := json.Marshal(r)
			return mcp.NewToolResultText(string(b)), nil
		}
		return server.NewInputRequestBuilder("state-s").Sample("s", mcp.CreateMessageParams{MaxTokens: 5, Messages: []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("hi")}}}).ToolResult(), nil
	})
	up.AddTool(mcp.NewTool("roots"), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r, ok := req.Params.InputResponses["r"]; ok {
			b, _ := json.Marshal(r)
			return mcp.NewToolResultText(string(b)), nil
		}
		return server.NewInputRequestBuilder("state-r").Roots("r").ToolResult(), nil
	})
	hs := httptest.NewServer(testkit.Refusing(server.NewStreamableHTTPServer(up), mcp.MethodInitialize))
	t.Cleanup(hs.Close)
	srv, pool, sink := proxyFor(t, upstream.Spec{Transport: upstream.TransportHTTP, URL: hs.URL + "/mcp"}, global)
	if got := pool.Protocol("up"); got != mcp.ProtocolVersion20260728 {
		t.Fatalf("the upstream speaks %q, want %s", got, mcp.ProtocolVersion20260728)
	}
	h, _, err := streamable.NewHandler(httpHost(srv), "127.0.0.1:0", streamable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL + streamable.EndpointPath, sink
}

// modernClient is a client of 2026-07-28 of the proxy at url.
func modernClient(t *testing.T, url string, opts ...client.ClientOption) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, opts...)
	testkit.Initialize(t, c, mcp.ProtocolVersion20260728)
	return c
}

func TestModernClientAnswersAModernUpstreamsElicitationThroughItsRetry(t *testing.T) {
	t.Parallel()
	url, sink := askingEnv(t, allowAll)
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
	// One decision for the call, which the retry goes on under.
	calls := decisionsOf(t, sink, "mcp:up:confirm")
	if len(calls) != 1 {
		t.Fatalf("the call's decisions = %+v, want one: the retry is the call that was decided", calls)
	}
	var results []audit.Event
	for _, e := range sink.events(t) {
		if e.Event == audit.KindResult && e.Tool == "mcp:up:confirm" {
			results = append(results, e)
		}
	}
	if len(results) != 2 || results[0].DecisionID != calls[0].ID || results[1].DecisionID != calls[0].ID || !strings.Contains(results[0].Detail, "asked for input") {
		t.Errorf("results = %+v, want the round that asked and the final result, both naming decision %s", results, calls[0].ID)
	}
}

func TestModernClientAnswersEveryRoundOfAnUpstreamThatAsksTwice(t *testing.T) {
	t.Parallel()
	url, _ := askingEnv(t, allowAll)
	h := &human{}
	c := modernClient(t, url, client.WithElicitationHandler(h))
	if got := testkit.Text(testkit.CallTool(t, c, "up__twice", nil)); got != "both answered" {
		t.Errorf("twice = %q", got)
	}
	if got := h.seen(); !slices.Equal(got, []string{"[up] one?", "[up] two?"}) {
		t.Errorf("the client was shown %q", got)
	}
}

func TestModernUpstreamsRootsRequestIsAnsweredByMcpwardenNotTheClient(t *testing.T) {
	t.Parallel()
	url, _ := askingEnv(t, allowAll)
	c := modernClient(t, url, client.WithRootsHandler(leakingRoots{}))
	got := testkit.Text(testkit.CallTool(t, c, "up__roots", nil))
	if strings.Contains(got, "secret") || !strings.Contains(got, `"roots":[]`) {
		t.Errorf("the upstream got roots %s, want mcpwarden's answer (no workspace: none), not the client's", got)
	}
}

// leakingRoots is a client's roots, which must not reach a shared upstream.
type leakingRoots struct{}

func (leakingRoots) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///home/secret", Name: "secret"}}}, nil
}

func TestModernUpstreamsDeniedElicitationNeverReachesAModernClient(t *testing.T) {
	t.Parallel()
	url, sink := askingEnv(t, rules.PolicySpec{Allow: []string{"mcp:up:*"}, Deny: []string{"mcp:up:elicitation/create"}})
	h := &human{}
	c := modernClient(t, url, client.WithElicitationHandler(h))
	res := testkit.CallTool(t, c, "up__confirm", nil)
	if !res.IsError || !strings.Contains(testkit.Text(res), "refused what the upstream asked for during it") {
		t.Errorf("confirm = %q (isError %v), want the call ended by the refusal", testkit.Text(res), res.IsError)
	}
	if got := h.seen(); len(got) != 0 {
		t.Errorf("the client was shown %q", got)
	}
	if ev := decisionsOf(t, sink, "mcp:up:elicitation/create"); len(ev) != 1 || ev[0].Decision != "deny" {
		t.Errorf("decisions = %+v, want the elicitation denied", ev)
	}
}

func TestModernUpstreamsSamplingTheRulesAskAboutIsNotPutToAModernClientsModel(t *testing.T) {
	t.Parallel()
	// With no resolver out of band, nobody can approve it before the
	// client's model would see it.
	url, sink := askingEnv(t, rules.PolicySpec{Allow: []string{"mcp:up:sample"}, Ask: []string{"mcp:up:sampling/createMessage"}})
	c := modernClient(t, url, client.WithSamplingHandler(countingSampler{t}))
	res := testkit.CallTool(t, c, "up__sample", nil)
	if !res.IsError || !strings.Contains(testkit.Text(res), "retrying its call") {
		t.Errorf("sample = %q (isError %v), want it refused, saying why", testkit.Text(res), res.IsError)
	}
	if ev := decisionsOf(t, sink, "mcp:up:sampling/createMessage"); len(ev) != 1 || ev[0].Decision != "ask" || ev[0].Outcome != audit.OutcomeRefused {
		t.Errorf("decisions = %+v, want the sampling request asked about and refused", ev)
	}
}

func TestModernUpstreamsAllowedSamplingReachesAModernClient(t *testing.T) {
	t.Parallel()
	url, _ := askingEnv(t, rules.PolicySpec{Allow: []string{"mcp:up:*"}})
	c := modernClient(t, url, client.WithSamplingHandler(answeringSampler{}))
	if got := testkit.Text(testkit.CallTool(t, c, "up__sample", nil)); !strings.Contains(got, "sampled") {
		t.Errorf("sample = %q, want the client's sampling result", got)
	}
}

// A countingSampler fails the test when it is asked.
type countingSampler struct{ t *testing.T }

func (s countingSampler) CreateMessage(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	s.t.Error("the client's model was asked to sample")
	return nil, context.Canceled
}

// An answeringSampler's model answers "sampled".
type answeringSampler struct{}

func (answeringSampler) CreateMessage(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return &mcp.CreateMessageResult{SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("sampled")}, Model: "m"}, nil
}

// rawCall sends tools/call name with args, and the retry's requestState
// and inputResponses when state is not empty, through c's transport as a
// client of 2026-07-28 declaring elicitation, and returns the result.
func rawCall(t *testing.T, c *client.Client, name string, args map[string]any, state string, responses map[string]any) *mcp.CallToolResult {
	t.Helper()
	params := map[string]any{"name": name, "arguments": args, "_meta": map[string]any{
		mcp.MetaKeyProtocolVersion:    mcp.ProtocolVersion20260728,
		mcp.MetaKeyClientCapabilities: map[string]any{"elicitation": map[string]any{}},
		mcp.MetaKeyClientInfo:         map[string]any{"name": "unit", "version": "0"},
	}}
	if state != "" {
		params["requestState"], params["inputResponses"] = state, responses
	}
	encoded, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	header := http.Header{}
	for k, v := range mcp.StandardHeaders(mcp.ProtocolVersion20260728, mcp.MethodToolsCall, encoded) {
		header.Set(k, v)
	}
	resp, err := c.GetTransport().SendRequest(t.Context(), transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(1)), Method: string(mcp.MethodToolsCall), Params: json.RawMessage(encoded), Header: header})
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	if resp.Error != nil {
		t.Fatalf("calling %s: %+v", name, resp.Error)
	}
	res, err := mcp.ParseCallToolResult(&resp.Result)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// declined is a client's answer to the relayed elicitation "ok".
var declined = map[string]any{"upstream:ok": map[string]any{"action": "decline"}}

// askedState calls confirm with text and returns the request state of
// the multi round-trip result it gets, which must relay the upstream's
// request under key.
func askedState(t *testing.T, c *client.Client, text, key string) string {
	t.Helper()
	res := rawCall(t, c, "up__confirm", map[string]any{"text": text}, "", nil)
	if !res.NeedsInput() || res.RequestState == "" {
		t.Fatalf("confirm = %+v, want the upstream's request relayed", res)
	}
	if _, ok := res.InputRequests[key]; !ok {
		t.Fatalf("relayed %+v, want the upstream's request under %s", res.InputRequests, key)
	}
	return res.RequestState
}

func TestRelayedRequestStateAttacks(t *testing.T) {
	t.Parallel()
	url, sink := askingEnv(t, allowAll)
	c := modernClient(t, url, client.WithElicitationHandler(&human{}))
	tests := []struct {
		name  string
		retry func(t *testing.T) *mcp.CallToolResult
		want  string
	}{
		{"a state used twice", func(t *testing.T) *mcp.CallToolResult {
			state := askedState(t, c, "a", "upstream:ok")
			if res := rawCall(t, c, "up__confirm", map[string]any{"text": "a"}, state, declined); testkit.Text(res) != "answered decline" {
				t.Fatalf("the first retry = %q", testkit.Text(res))
			}
			return rawCall(t, c, "up__confirm", map[string]any{"text": "a"}, state, declined)
		}, "not one mcpwarden has pending"},
		{"a state carried to other arguments", func(t *testing.T) *mcp.CallToolResult {
			return rawCall(t, c, "up__confirm", map[string]any{"text": "other"}, askedState(t, c, "a", "upstream:ok"), declined)
		}, "issued for another call"},
		{"a state carried to another tool", func(t *testing.T) *mcp.CallToolResult {
			return rawCall(t, c, "up__twice", nil, askedState(t, c, "a", "upstream:ok"), declined)
		}, "issued for another call"},
		{"a retry that leaves the request unanswered", func(t *testing.T) *mcp.CallToolResult {
			return rawCall(t, c, "up__confirm", map[string]any{"text": "a"}, askedState(t, c, "a", "upstream:ok"), map[string]any{})
		}, "does not answer every input request"},
		{"an answer that is not an object", func(t *testing.T) *mcp.CallToolResult {
			return rawCall(t, c, "up__confirm", map[string]any{"text": "a"}, askedState(t, c, "a", "upstream:ok"), map[string]any{"upstream:ok": "accept"})
		}, "is not a JSON object"},
		{"a forged state", func(t *testing.T) *mcp.CallToolResult {
			return rawCall(t, c, "up__confirm", map[string]any{"text": "a"}, "relay.AAAAAAAAAAAAAAAAAAAAAAAAAA", declined)
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
