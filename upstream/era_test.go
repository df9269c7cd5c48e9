package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
	res, err := pool.Call(t.Context(), "modern", nil, mcp.CallToolParams{Name: "tool1", Arguments: map[string]any{"text": "modern"}})
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
		if _, err := pool.Call(t.Context(), name, nil, mcp.CallToolParams{Name: "tool0", Arguments: map[string]any{"text": "x"}}); err != nil {
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

// methodsSeen wraps h, recording the JSON-RPC method of every POST it
// gets, in order.
type methodsSeen struct {
	h       http.Handler
	mu      sync.Mutex
	methods []string
}

func (m *methodsSeen) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		m.mu.Lock()
		m.methods = append(m.methods, msg.Method)
		m.mu.Unlock()
	}
	m.h.ServeHTTP(w, r)
}

func (m *methodsSeen) seen() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.methods)
}

// TestModernOnlyUpstreamThatAlsoAnswersInitializeIsSpokenToInModern: a
// server that advertises only 2026-07-28 through server/discover but
// still answers initialize (the conformance suite's scenario servers,
// mcp-go's server restricted to that version) is not opened with the
// handshake, whose requests carry none of 2026-07-28's headers or _meta:
// server/discover comes first, and the session speaks 2026-07-28.
func TestModernOnlyUpstreamThatAlsoAnswersInitializeIsSpokenToInModern(t *testing.T) {
	t.Parallel()
	seen := &methodsSeen{h: mcpserver.NewStreamableHTTPServer(newStandIn(1), mcpserver.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20260728))}
	hs := httptest.NewServer(seen)
	t.Cleanup(hs.Close)
	pool := Start(t.Context(), map[string]Spec{"modern": {Transport: TransportHTTP, URL: hs.URL + "/mcp"}}, nil)
	t.Cleanup(func() { pool.Close() })
	if err := pool.Err("modern"); err != nil {
		t.Fatal(err)
	}
	if got := pool.Protocol("modern"); got != mcp.ProtocolVersion20260728 {
		t.Errorf("protocol = %q, want %s", got, mcp.ProtocolVersion20260728)
	}
	methods := seen.seen()
	if len(methods) == 0 || methods[0] != string(mcp.MethodServerDiscover) || slices.Contains(methods, string(mcp.MethodInitialize)) {
		t.Errorf("the upstream got %v, want server/discover first and no initialize", methods)
	}
}

// TestUpstreamOfBothGenerationsIsSpokenToWithTheHandshake is the other
// side: a server that also speaks 2025-11-25 is spoken to with the
// handshake, on which it may ask the client for elicitation or sampling
// in the middle of a call, and it gets its GET stream.
func TestUpstreamOfBothGenerationsIsSpokenToWithTheHandshake(t *testing.T) {
	t.Parallel()
	seen := &methodsSeen{h: mcpserver.NewStreamableHTTPServer(newStandIn(1))}
	hs := httptest.NewServer(seen)
	t.Cleanup(hs.Close)
	pool := Start(t.Context(), map[string]Spec{"both": {Transport: TransportHTTP, URL: hs.URL + "/mcp"}}, nil)
	t.Cleanup(func() { pool.Close() })
	if err := pool.Err("both"); err != nil {
		t.Fatal(err)
	}
	if got := pool.Protocol("both"); got != mcp.LATEST_LEGACY_PROTOCOL_VERSION {
		t.Errorf("protocol = %q, want %s", got, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	}
	if _, err := pool.Call(t.Context(), "both", nil, mcp.CallToolParams{Name: "tool0", Arguments: map[string]any{"text": "x"}}); err != nil {
		t.Error(err)
	}
}

// TestModernUpstreamThatRefusesTheFirstVersionIsAskedAgain is the next
// variant: a server of 2026-07-28 alone that refuses the first
// server/discover with the error of an unsupported version (naming
// 2026-07-28 as the one it supports) is asked again, not opened with the
// handshake.
func TestModernUpstreamThatRefusesTheFirstVersionIsAskedAgain(t *testing.T) {
	t.Parallel()
	h := mcpserver.NewStreamableHTTPServer(newStandIn(1), mcpserver.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20260728))
	var refused atomic.Bool
	seen := &methodsSeen{h: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && !refused.Swap(true) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"],"requested":"2026-07-28"}}}`)
			return
		}
		h.ServeHTTP(w, r)
	})}
	hs := httptest.NewServer(seen)
	t.Cleanup(hs.Close)
	pool := Start(t.Context(), map[string]Spec{"modern": {Transport: TransportHTTP, URL: hs.URL + "/mcp"}}, nil)
	t.Cleanup(func() { pool.Close() })
	if err := pool.Err("modern"); err != nil {
		t.Fatal(err)
	}
	if got := pool.Protocol("modern"); got != mcp.ProtocolVersion20260728 {
		t.Errorf("protocol = %q, want %s", got, mcp.ProtocolVersion20260728)
	}
	if methods := seen.seen(); slices.Contains(methods, string(mcp.MethodInitialize)) {
		t.Errorf("the upstream got %v, want no initialize", methods)
	}
}

// TestHandshakeUpstreamThatAnswersDiscoverWithAnEmptyResultGetsTheHandshake
// is the variant the other way: a server of the handshake that answers
// every method it does not know, server/discover included, with an empty
// result (the conformance suite's sse-retry server) is not taken for one
// of 2026-07-28: it gets the handshake and its GET stream.
func TestHandshakeUpstreamThatAnswersDiscoverWithAnEmptyResultGetsTheHandshake(t *testing.T) {
	t.Parallel()
	h := mcpserver.NewStreamableHTTPServer(newStandIn(1))
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(body, &msg) == nil && msg.Method == string(mcp.MethodServerDiscover) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`, msg.ID)
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	pool := Start(t.Context(), map[string]Spec{"legacy": {Transport: TransportHTTP, URL: hs.URL + "/mcp"}}, nil)
	t.Cleanup(func() { pool.Close() })
	if err := pool.Err("legacy"); err != nil {
		t.Fatal(err)
	}
	if got := pool.Protocol("legacy"); got != mcp.LATEST_LEGACY_PROTOCOL_VERSION {
		t.Errorf("protocol = %q, want %s", got, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	}
}
