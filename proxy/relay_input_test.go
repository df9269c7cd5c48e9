package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

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

// An askingProxy is a proxy served over streamable HTTP at url in front of
// "up", an upstream whose tools ask the client for input during the call:
// confirm (text) an elicitation, answered "answered <action>"; twice two
// elicitations in turn, answered with both actions; sample a sampling
// request, answered with what was sampled. ended, when set, receives
// what the upstream's requests got as each call ends.
type askingProxy struct {
	srv   *Server
	url   string
	sink  *memorySink
	ended <-chan string
}

// An askingKind is one of the two ways an upstream asks a client for
// input during a call, and how the relay shows to a 2026-07-28 client.
type askingKind struct {
	name string
	env  func(t *testing.T, global rules.PolicySpec, o Options) askingProxy
	// confirmKey is the key confirm's request is relayed under, and
	// state the request states the client is sent start with.
	confirmKey, state string
}

var askingKinds = []askingKind{
	{"an upstream of 2026-07-28, by multi round-trip results", modernAskingEnv, "upstream:ok", "relay."},
	{"an upstream of the handshake, by requests within the call", handshakeAskingEnv, "upstream:1", "held."},
}

// forEachAskingKind runs test for each askingKind, in parallel.
func forEachAskingKind(t *testing.T, test func(t *testing.T, k askingKind)) {
	t.Parallel()
	for _, k := range askingKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			test(t, k)
		})
	}
}

// modernAskingEnv is the askingProxy of an upstream of 2026-07-28 alone,
// which asks by multi round-trip results; its tool roots also asks for
// the roots and answers with what it got.
func modernAskingEnv(t *testing.T, global rules.PolicySpec, o Options) askingProxy {
	t.Helper()
	up := server.NewMCPServer("modern", "1.0", server.WithToolCapabilities(false))
	elicit := func(state, id, msg string) *mcp.CallToolResult {
		return server.NewInputRequestBuilder(state).Elicit(id, mcp.ElicitationParams{Message: msg, RequestedSchema: map[string]any{"type": "object"}}).ToolResult()
	}
	action := func(req mcp.CallToolRequest, id string) string {
		if ans := server.ElicitationResponse(req.Params.InputResponses, id); ans != nil {
			return string(ans.Action)
		}
		return "none"
	}
	up.AddTool(mcp.NewTool("confirm", mcp.WithString("text")), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Params.RequestState == "state-1" { // the upstream's own state came back
			return mcp.NewToolResultText("answered " + action(req, "ok")), nil
		}
		return elicit("state-1", "ok", "proceed?"), nil
	})
	up.AddTool(mcp.NewTool("twice"), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		switch s := req.Params.RequestState; {
		case s == "":
			return elicit("after-one", "first", "one?"), nil
		case s == "after-one":
			return elicit("after-two:"+action(req, "first"), "second", "two?"), nil
		default:
			return mcp.NewToolResultText(strings.TrimPrefix(s, "after-two:") + " then " + action(req, "second")), nil
		}
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
	srv, pool, sink := proxyWith(t, upstream.Spec{Transport: upstream.TransportHTTP, URL: hs.URL + "/mcp"}, global, o)
	if got := pool.Protocol("up"); got != mcp.ProtocolVersion20260728 {
		t.Fatalf("the upstream speaks %q, want %s", got, mcp.ProtocolVersion20260728)
	}
	return askingProxy{srv: srv, url: serveHTTP(t, srv), sink: sink}
}

// serveHTTP serves srv over streamable HTTP and returns its endpoint URL.
func serveHTTP(t *testing.T, srv *Server) string {
	t.Helper()
	h, _, err := streamable.NewHandler(httpHost(srv), "127.0.0.1:0", streamable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL + streamable.EndpointPath
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

// resultsOf are the result events of the calls of tool (canonical).
func resultsOf(t *testing.T, sink *memorySink, tool string) []audit.Event {
	t.Helper()
	var out []audit.Event
	for _, e := range sink.events(t) {
		if e.Event == audit.KindResult && e.Tool == tool {
			out = append(out, e)
		}
	}
	return out
}

func TestModernClientAnswersAnUpstreamsElicitationThroughItsRetry(t *testing.T) {
	forEachAskingKind(t, func(t *testing.T, k askingKind) {
		p := k.env(t, allowAll, Options{})
		h := &human{}
		c := modernClient(t, p.url, client.WithElicitationHandler(h))
		res := testkit.CallTool(t, c, "up__confirm", map[string]any{"text": "x"})
		if got := testkit.Text(res); res.IsError || got != "answered decline" {
			t.Errorf("confirm = %q (isError %v), want the upstream's answer to the client's decline", got, res.IsError)
		}
		if got := h.seen(); !slices.Equal(got, []string{"[up] proceed?"}) {
			t.Errorf("the client was shown %q, want the upstream's request marked as the server's", got)
		}
		if ev := decisionsOf(t, p.sink, "mcp:up:elicitation/create"); len(ev) != 1 || ev[0].Decision != "allow" {
			t.Errorf("decisions = %+v, want the elicitation decided and allowed once", ev)
		}
		// One decision for the call, which the retry goes on under.
		calls := decisionsOf(t, p.sink, "mcp:up:confirm")
		if len(calls) != 1 {
			t.Fatalf("the call's decisions = %+v, want one: the retry is the call that was decided", calls)
		}
		if results := resultsOf(t, p.sink, "mcp:up:confirm"); len(results) != 2 || results[0].DecisionID != calls[0].ID || results[1].DecisionID != calls[0].ID || !strings.Contains(results[0].Detail, "asked for input") {
			t.Errorf("results = %+v, want the round that asked and the final result, both naming decision %s", results, calls[0].ID)
		}
	})
}

func TestModernClientAnswersEveryRequestOfAnUpstreamThatAsksTwice(t *testing.T) {
	forEachAskingKind(t, func(t *testing.T, k askingKind) {
		p := k.env(t, allowAll, Options{})
		h := &human{}
		c := modernClient(t, p.url, client.WithElicitationHandler(h))
		if got := testkit.Text(testkit.CallTool(t, c, "up__twice", nil)); got != "decline then decline" {
			t.Errorf("twice = %q", got)
		}
		if got := h.seen(); !slices.Equal(got, []string{"[up] one?", "[up] two?"}) {
			t.Errorf("the client was shown %q", got)
		}
	})
}

func TestUpstreamsDeniedElicitationNeverReachesAModernClient(t *testing.T) {
	forEachAskingKind(t, func(t *testing.T, k askingKind) {
		p := k.env(t, rules.PolicySpec{Allow: []string{"mcp:up:*"}, Deny: []string{"mcp:up:elicitation/create"}}, Options{})
		h := &human{}
		c := modernClient(t, p.url, client.WithElicitationHandler(h))
		res := testkit.CallTool(t, c, "up__confirm", nil)
		if got := h.seen(); len(got) != 0 {
			t.Errorf("the client was shown %q", got)
		}
		if ev := decisionsOf(t, p.sink, "mcp:up:elicitation/create"); len(ev) != 1 || ev[0].Decision != "deny" {
			t.Errorf("decisions = %+v, want the elicitation denied", ev)
		}
		// A relayed round ends the call; an upstream of the handshake is
		// told and answers as it does to any refusal.
		if got := testkit.Text(res); !strings.Contains(got, "refused what the upstream asked for during it") && !strings.Contains(got, "failed") {
			t.Errorf("confirm = %q (isError %v), want the refusal to show", got, res.IsError)
		}
	})
}

func TestUpstreamsSamplingTheRulesAskAboutIsNotPutToAModernClientsModel(t *testing.T) {
	forEachAskingKind(t, func(t *testing.T, k askingKind) {
		// With no resolver out of band, nobody can approve it before the
		// client's model would see it.
		p := k.env(t, rules.PolicySpec{Allow: []string{"mcp:up:sample"}, Ask: []string{"mcp:up:sampling/createMessage"}}, Options{})
		c := modernClient(t, p.url, client.WithSamplingHandler(countingSampler{t}))
		res := testkit.CallTool(t, c, "up__sample", nil)
		if !res.IsError || !strings.Contains(testkit.Text(res), "retrying its call") {
			t.Errorf("sample = %q (isError %v), want it refused, saying why", testkit.Text(res), res.IsError)
		}
		if ev := decisionsOf(t, p.sink, "mcp:up:sampling/createMessage"); len(ev) != 1 || ev[0].Decision != "ask" || ev[0].Outcome != audit.OutcomeRefused {
			t.Errorf("decisions = %+v, want the sampling request asked about and refused", ev)
		}
	})
}

func TestUpstreamsAllowedSamplingReachesAModernClient(t *testing.T) {
	forEachAskingKind(t, func(t *testing.T, k askingKind) {
		p := k.env(t, rules.PolicySpec{Allow: []string{"mcp:up:*"}}, Options{})
		c := modernClient(t, p.url, client.WithSamplingHandler(answeringSampler{}))
		if got := testkit.Text(testkit.CallTool(t, c, "up__sample", nil)); !strings.Contains(got, "sampled") {
			t.Errorf("sample = %q, want the client's sampling result", got)
		}
	})
}

func TestModernUpstreamsRootsRequestIsAnsweredByMcpwardenNotTheClient(t *testing.T) {
	t.Parallel()
	p := modernAskingEnv(t, allowAll, Options{})
	c := modernClient(t, p.url, client.WithRootsHandler(leakingRoots{}))
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

// askedState calls confirm with text and returns the request state of
// the multi round-trip result it gets, which must relay the upstream's
// request under k's key.
func askedState(t *testing.T, c *client.Client, k askingKind, text string) string {
	t.Helper()
	res := rawCall(t, c, "up__confirm", map[string]any{"text": text}, "", nil)
	if !res.NeedsInput() || !strings.HasPrefix(res.RequestState, k.state) {
		t.Fatalf("confirm = %+v, want the upstream's request relayed under a state starting %q", res, k.state)
	}
	if _, ok := res.InputRequests[k.confirmKey]; !ok {
		t.Fatalf("relayed %+v, want the upstream's request under %s", res.InputRequests, k.confirmKey)
	}
	return res.RequestState
}

func TestRequestStateAttacks(t *testing.T) {
	forEachAskingKind(t, func(t *testing.T, k askingKind) {
		p := k.env(t, allowAll, Options{})
		c := modernClient(t, p.url, client.WithElicitationHandler(&human{}))
		declined := map[string]any{k.confirmKey: map[string]any{"action": "decline"}}
		args := map[string]any{"text": "a"}
		tests := []struct {
			name  string
			retry func(t *testing.T) *mcp.CallToolResult
			want  string
		}{
			{"a state used twice", func(t *testing.T) *mcp.CallToolResult {
				state := askedState(t, c, k, "a")
				if res := rawCall(t, c, "up__confirm", args, state, declined); testkit.Text(res) != "answered decline" {
					t.Fatalf("the first retry = %q", testkit.Text(res))
				}
				return rawCall(t, c, "up__confirm", args, state, declined)
			}, "not one mcpwarden has pending"},
			{"a state carried to other arguments", func(t *testing.T) *mcp.CallToolResult {
				return rawCall(t, c, "up__confirm", map[string]any{"text": "other"}, askedState(t, c, k, "a"), declined)
			}, "issued for another call"},
			{"a state carried to another tool", func(t *testing.T) *mcp.CallToolResult {
				return rawCall(t, c, "up__twice", nil, askedState(t, c, k, "a"), declined)
			}, "issued for another call"},
			{"a retry that leaves the request unanswered", func(t *testing.T) *mcp.CallToolResult {
				return rawCall(t, c, "up__confirm", args, askedState(t, c, k, "a"), map[string]any{})
			}, "does not answer every input request"},
			{"an answer that is not an object", func(t *testing.T) *mcp.CallToolResult {
				return rawCall(t, c, "up__confirm", args, askedState(t, c, k, "a"), map[string]any{k.confirmKey: "accept"})
			}, "is not a JSON object"},
			{"a forged state", func(t *testing.T) *mcp.CallToolResult {
				return rawCall(t, c, "up__confirm", args, k.state+"AAAAAAAAAAAAAAAAAAAAAAAAAA", declined)
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
		for _, e := range p.sink.events(t) {
			if e.Event == audit.KindDecision && e.Rule == requestStateRule && e.Decision == "deny" {
				refused++
			}
		}
		if refused != len(tests) {
			t.Errorf("%d refusals audited under %s, want %d", refused, requestStateRule, len(tests))
		}
		if p.ended != nil {
			// A held call whose state was misused is cancelled: its
			// upstream's request fails rather than waiting for an answer
			// that cannot come (four of them; the one used twice was
			// answered first, and the forged state held none).
			expectEnds(t, p.ended, "decline", "failed", "failed", "failed", "failed")
		}
	})
}

// expectEnds waits for the ends of the held calls, in any order, each
// starting with one of want.
func expectEnds(t *testing.T, ended <-chan string, want ...string) {
	t.Helper()
	var got []string
	for range want {
		select {
		case e := <-ended:
			got = append(got, e)
		case <-time.After(10 * time.Second):
			t.Fatalf("held calls ended %q, want %d ends", got, len(want))
		}
	}
	for _, w := range want {
		i := slices.IndexFunc(got, func(e string) bool { return strings.HasPrefix(e, w) })
		if i < 0 {
			t.Fatalf("held calls ended %q, want %q", got, want)
		}
		got = slices.Delete(got, i, i+1)
	}
}
