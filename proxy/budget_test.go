package proxy

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/proxy/streamable"
	"github.com/mcpwarden/mcpwarden/rules"
)

var allowAllServers = rules.Spec{Global: rules.PolicySpec{Allow: []string{"mcp:*:*"}}}

func TestLargeArgumentsBeyondTheInflightBoundAreRefused(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, allowAllServers, Options{MaxInflightBytes: 2 << 20})
	c := e.client(t)
	ctx := t.Context()
	big := strings.Repeat("a", 700<<10)

	// A call holding 1.5 MiB of arguments waits in the upstream.
	held := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "fs__hold", Arguments: map[string]any{"blob": strings.Repeat("h", 1536<<10)}}})
		if err != nil {
			t.Error(err)
		}
		held <- res
	}()
	<-e.fs.entered
	echoes := e.fs.count(mcp.MethodToolsCall)

	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "fs__echo", Arguments: map[string]any{"text": big}}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(testkit.Text(res), "max_inflight_mb exceeded: its arguments") || !strings.Contains(testkit.Text(res), "bound of 2 MiB") || !strings.Contains(testkit.Text(res), "nothing was forwarded") {
		t.Errorf("a call beyond the bound got %q, want a refusal naming max_inflight_mb", testkit.Text(res))
	}
	if got := e.fs.count(mcp.MethodToolsCall); got != echoes {
		t.Errorf("the refused call reached the upstream")
	}
	// Small calls still fit.
	if res := testkit.CallTool(t, c, "fs__echo", map[string]any{"text": "small"}); res.IsError {
		t.Errorf("a small call was refused: %q", testkit.Text(res))
	}

	close(e.fs.release)
	if res := <-held; res == nil || res.IsError {
		t.Fatalf("the held call failed: %+v", res)
	}
	if res := testkit.CallTool(t, c, "fs__echo", map[string]any{"text": big}); res.IsError {
		t.Errorf("the large call was refused after the held one ended: %q", testkit.Text(res))
	}
	if got := e.srv.inflight.InUse(); got != 0 {
		t.Errorf("%d bytes still held after every call ended", got)
	}
}

func TestLargeResultBeyondTheInflightBoundIsDropped(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, allowAllServers, Options{MaxInflightBytes: 1 << 20})
	c := e.client(t)
	// 600 KiB of arguments fit; the 600 KiB result echoed back does not.
	res := testkit.CallTool(t, c, "fs__echo", map[string]any{"text": strings.Repeat("b", 600<<10)})
	if !res.IsError || !strings.Contains(testkit.Text(res), "its result was dropped") || !strings.Contains(testkit.Text(res), "max_inflight_mb") {
		t.Errorf("got %q, want the result dropped, naming max_inflight_mb", testkit.Text(res))
	}
	var result *audit.Event
	for _, ev := range e.sink.events(t) {
		if ev.Event == audit.KindResult {
			result = &ev
		}
	}
	if result == nil || result.IsError == nil || !*result.IsError || !strings.Contains(result.Error, "max_inflight_mb") {
		t.Errorf("result event %+v, want an error naming max_inflight_mb", result)
	}
	if got := e.srv.inflight.InUse(); got != 0 {
		t.Errorf("%d bytes still held after the call ended", got)
	}
}

// httpClient serves e's proxy over a loopback HTTP listener, through the
// handler ListenAndServe uses, and connects an initialized client to it.
func (e *catalogEnv) httpClient(t *testing.T) *client.Client {
	t.Helper()
	h, _, err := streamable.NewHandler(httpHost(e.srv), "127.0.0.1:0", streamable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	c, err := client.NewStreamableHttpClient(ts.URL + streamable.EndpointPath)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Initialize(t, c, "2025-11-25")
	return c
}

func TestLargeBodiesBeyondTheInflightBoundAreRefusedOverHTTP(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, allowAllServers, Options{MaxInflightBytes: 1 << 20})
	c := e.httpClient(t)
	calls := e.fs.count(mcp.MethodToolsCall)
	_, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "fs__echo", Arguments: map[string]any{"text": strings.Repeat("c", 1100<<10)}}})
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "max_inflight_mb exceeded: the request body") {
		t.Errorf("a body beyond the bound: got %v, want a refusal naming max_inflight_mb", err)
	}
	if got := e.fs.count(mcp.MethodToolsCall); got != calls {
		t.Errorf("the refused call reached the upstream")
	}
	// 400 KiB of arguments and 400 KiB of result fit in 1 MiB only if the
	// arguments are counted once, as the body, and not again by the call.
	res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "fs__echo", Arguments: map[string]any{"text": strings.Repeat("d", 400<<10)}}})
	if err != nil || res.IsError {
		t.Fatalf("a call within the bound: %v, %q", err, testkit.Text(res))
	}
	if got := e.srv.inflight.InUse(); got != 0 {
		t.Errorf("%d bytes still held after every request ended", got)
	}
}
