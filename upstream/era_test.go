package upstream

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// modernOnly serves newStandIn(n) over streamable HTTP speaking only
// protocol 2026-07-28: it advertises that version alone through
// server/discover, and refuses initialize as a server without the
// handshake does (mcp-go's server has no option for that: its
// WithStreamableHTTPProtocolVersions restricts what discover advertises
// and still answers initialize).
func modernOnly(t *testing.T, n int) string {
	t.Helper()
	h := mcpserver.NewStreamableHTTPServer(newStandIn(n), mcpserver.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20260728))
	hs := httptest.NewServer(testkit.Refusing(h, mcp.MethodInitialize))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// legacyOnly serves h as a server of the initialize handshake alone, which
// answers server/discover with "method not found".
func legacyOnly(h http.Handler) http.Handler { return testkit.Refusing(h, mcp.MethodServerDiscover) }

func TestModernOnlyUpstreamIsReachable(t *testing.T) {
	t.Parallel()
	pool := Start(t.Context(), map[string]Spec{"modern": {Transport: TransportHTTP, URL: modernOnly(t, 3)}}, nil)
	t.Cleanup(func() { pool.Close() })
	if err := pool.Err("modern"); err != nil {
		t.Fatal(err)
	}
	tools, err := pool.Tools("modern")
	if err != nil || len(tools) != 3 {
		t.Fatalf("tools = %d, %v; want all 3", len(tools), err)
	}
	res, err := pool.Call(t.Context(), "modern", mcp.CallToolParams{Name: "tool1", Arguments: map[string]any{"text": "modern"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := firstText(t, res); got != "modern" {
		t.Errorf("tool1 = %q", got)
	}
	if got := pool.Protocol("modern"); got != mcp.ProtocolVersion20260728 {
		t.Errorf("protocol = %q, want %s", got, mcp.ProtocolVersion20260728)
	}
}

// TestEachUpstreamSpeaksItsOwnGeneration is the next variant: a server of
// the initialize handshake, over each transport, is still reached with it,
// next to a modern one.
func TestEachUpstreamSpeaksItsOwnGeneration(t *testing.T) {
	t.Parallel()
	legacy := httptest.NewServer(legacyOnly(mcpserver.NewStreamableHTTPServer(newStandIn(1))))
	t.Cleanup(legacy.Close)
	sse := httptest.NewServer(mcpserver.NewSSEServer(newStandIn(1)))
	t.Cleanup(sse.Close)
	pool := Start(t.Context(), map[string]Spec{
		"modern": {Transport: TransportHTTP, URL: modernOnly(t, 1)},
		"legacy": {Transport: TransportHTTP, URL: legacy.URL + "/mcp"},
		"sse":    {Transport: TransportSSE, URL: sse.URL + "/sse"},
		"stdio":  {Transport: TransportStdio, Command: os.Args[0], Env: map[string]string{stdioServerEnv: filepath.Join(t.TempDir(), "pid")}},
	}, nil)
	t.Cleanup(func() { pool.Close() })
	for name, want := range map[string]string{"modern": mcp.ProtocolVersion20260728, "legacy": mcp.LATEST_LEGACY_PROTOCOL_VERSION, "sse": "", "stdio": ""} {
		if err := pool.Err(name); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		got := pool.Protocol(name)
		if want != "" && got != want || got == "" {
			t.Errorf("%s speaks %q, want %q", name, got, want)
		}
		if _, err := pool.Call(t.Context(), name, mcp.CallToolParams{Name: "tool0", Arguments: map[string]any{"text": "x"}}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestNoMCPEndpointIsNotCalledALegacySSEServer: a URL that answers both
// generations' first request with 404 is named as such, not guessed to be
// a legacy SSE server.
func TestNoMCPEndpointIsNotCalledALegacySSEServer(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(hs.Close)
	pool := Start(t.Context(), map[string]Spec{"nowhere": {Transport: TransportHTTP, URL: hs.URL + "/mcp"}}, nil)
	t.Cleanup(func() { pool.Close() })
	err := pool.Err("nowhere")
	if err == nil {
		t.Fatal("a 404 endpoint is up")
	}
	if strings.Contains(err.Error(), "likely a legacy SSE server") || !strings.Contains(err.Error(), "server/discover") || !strings.Contains(err.Error(), "transport: sse") {
		t.Errorf("err = %v, want it to say both generations were refused and what to write for an SSE server", err)
	}
}
