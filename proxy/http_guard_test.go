package proxy

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/rules"
)

// reached is the handler behind the guard: it answers 200 with the body it
// read, so a test sees both whether a request got through and what of it.
var reached = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("X-Reached", "yes")
	_, _ = w.Write(body)
})

func newTestGuard(t *testing.T, o GuardOptions, id Identity) http.Handler {
	t.Helper()
	h, err := newGuard(o, id, reached)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

type guardRequest struct {
	name   string
	host   string
	header http.Header
	body   string
	want   int
}

func runGuard(t *testing.T, h http.Handler, tests []guardRequest) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "http://127.0.0.1:8765/mcp", strings.NewReader(tt.body))
			if tt.host != "" {
				req.Host = tt.host
			}
			for k, vs := range tt.header {
				req.Header[k] = vs
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.want {
				t.Errorf("status = %d, want %d (body %q)", rec.Code, tt.want, rec.Body.String())
			}
			if got := rec.Header().Get("X-Reached") == "yes"; got != (tt.want == http.StatusOK) {
				t.Errorf("reached the MCP handler = %v with status %d", got, rec.Code)
			}
		})
	}
}

func TestDNSRebindingHostIsRefused(t *testing.T) {
	t.Parallel()
	// A page on attacker.example whose name now resolves to 127.0.0.1: the
	// browser connects to loopback but still sends its own name as Host.
	h := newTestGuard(t, GuardOptions{}, Identity{Token: "s3cret"})
	runGuard(t, h, []guardRequest{
		{name: "attacker name with port", host: "attacker.example:8765", want: http.StatusForbidden},
		{name: "attacker name without port", host: "attacker.example", want: http.StatusForbidden},
		{name: "name starting with localhost", host: "localhost.attacker.example:8765", want: http.StatusForbidden},
		{name: "wildcard DNS for 127.0.0.1", host: "127.0.0.1.nip.io:8765", want: http.StatusForbidden},
		{name: "other loopback address not listed", host: "127.0.0.2:8765", want: http.StatusForbidden},
		{name: "unbracketed IPv6", host: "::1:8765", want: http.StatusForbidden},
		{name: "empty Host", host: " ", want: http.StatusForbidden},
	})
}

func TestLocalhostHostsAreAccepted(t *testing.T) {
	t.Parallel()
	h := newTestGuard(t, GuardOptions{}, Identity{})
	runGuard(t, h, []guardRequest{
		{name: "localhost with port", host: "localhost:8765", want: http.StatusOK},
		{name: "localhost in capitals", host: "LOCALHOST:1", want: http.StatusOK},
		{name: "localhost with trailing dot", host: "localhost.", want: http.StatusOK},
		{name: "127.0.0.1 without port", host: "127.0.0.1", want: http.StatusOK},
		{name: "IPv6 loopback with port", host: "[::1]:8765", want: http.StatusOK},
		{name: "IPv6 loopback without port", host: "[::1]", want: http.StatusOK},
	})
}

func TestHostAllowlistApplies(t *testing.T) {
	t.Parallel()
	h := newTestGuard(t, GuardOptions{AllowedHosts: []string{"mcp.example.com", "10.0.0.5:8443", "[fd00::1]"}}, Identity{})
	runGuard(t, h, []guardRequest{
		{name: "listed name, any port", host: "mcp.example.com:9000", want: http.StatusOK},
		{name: "listed name in other case", host: "MCP.Example.COM", want: http.StatusOK},
		{name: "listed address and port", host: "10.0.0.5:8443", want: http.StatusOK},
		{name: "listed address, other port", host: "10.0.0.5:8444", want: http.StatusForbidden},
		{name: "listed IPv6", host: "[fd00::1]:1", want: http.StatusOK},
		{name: "subdomain of a listed name", host: "x.mcp.example.com", want: http.StatusForbidden},
		{name: "localhost still accepted", host: "localhost:8765", want: http.StatusOK},
	})
}

func TestCrossOriginRequestIsRefused(t *testing.T) {
	t.Parallel()
	h := newTestGuard(t, GuardOptions{AllowedOrigins: []string{"https://app.example.com"}}, Identity{})
	origin := func(v ...string) http.Header { return http.Header{"Origin": v} }
	runGuard(t, h, []guardRequest{
		{name: "page on another site", header: origin("https://attacker.example"), want: http.StatusForbidden},
		{name: "opaque origin of a sandboxed frame", header: origin("null"), want: http.StatusForbidden},
		{name: "name starting with localhost", header: origin("http://localhost.attacker.example"), want: http.StatusForbidden},
		{name: "listed origin on another port", header: origin("https://app.example.com:8443"), want: http.StatusForbidden},
		{name: "listed host over plain http", header: origin("http://app.example.com"), want: http.StatusForbidden},
		{name: "non-http scheme on localhost", header: origin("file://localhost"), want: http.StatusForbidden},
		{name: "two Origin headers", header: origin("http://localhost", "https://attacker.example"), want: http.StatusForbidden},
		{name: "listed origin", header: origin("https://app.example.com"), want: http.StatusOK},
		{name: "localhost page", header: origin("http://localhost:5173"), want: http.StatusOK},
		{name: "loopback page over https", header: origin("https://127.0.0.1:3000"), want: http.StatusOK},
		{name: "IPv6 loopback page", header: origin("http://[::1]:3000"), want: http.StatusOK},
		{name: "no Origin: a non-browser client", want: http.StatusOK},
	})
}

func TestMissingTokenIs401(t *testing.T) {
	t.Parallel()
	h := newTestGuard(t, GuardOptions{}, Identity{Token: "s3cret"})
	auth := func(v string) http.Header { return http.Header{"Authorization": {v}} }
	runGuard(t, h, []guardRequest{
		{name: "no Authorization header", want: http.StatusUnauthorized},
		{name: "wrong token", header: auth("Bearer s3cre"), want: http.StatusUnauthorized},
		{name: "token with a suffix", header: auth("Bearer s3cretX"), want: http.StatusUnauthorized},
		{name: "empty bearer", header: auth("Bearer "), want: http.StatusUnauthorized},
		{name: "other scheme", header: auth("Basic czNjcmV0"), want: http.StatusUnauthorized},
		{name: "right token", header: auth("Bearer s3cret"), want: http.StatusOK},
	})
}

func TestBadHostIsRefusedBeforeTheTokenIsChecked(t *testing.T) {
	t.Parallel()
	// A rebinding page has no token; it must learn nothing but 403.
	h := newTestGuard(t, GuardOptions{}, Identity{Token: "s3cret"})
	runGuard(t, h, []guardRequest{
		{name: "bad Host, no token", host: "attacker.example", want: http.StatusForbidden},
		{name: "bad Origin, right token", header: http.Header{"Origin": {"https://attacker.example"}, "Authorization": {"Bearer s3cret"}}, want: http.StatusForbidden},
	})
}

func TestOversizedBodyIs413(t *testing.T) {
	t.Parallel()
	h := newTestGuard(t, GuardOptions{MaxBodyBytes: 16}, Identity{})
	runGuard(t, h, []guardRequest{
		{name: "body over the limit", body: strings.Repeat("x", 17), want: http.StatusRequestEntityTooLarge},
		{name: "body at the limit", body: strings.Repeat("x", 16), want: http.StatusOK},
	})

	t.Run("body over the limit without Content-Length", func(t *testing.T) {
		t.Parallel()
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "http://localhost/mcp", io.MultiReader(strings.NewReader(strings.Repeat("x", 10)), strings.NewReader(strings.Repeat("y", 10))))
		req.ContentLength = -1
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusRequestEntityTooLarge {
			t.Errorf("status = %d, want 413", rec.Code)
		}
	})
	t.Run("declared length over the limit", func(t *testing.T) {
		t.Parallel()
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "http://localhost/mcp", strings.NewReader("{}"))
		req.ContentLength = 1 << 40
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusRequestEntityTooLarge {
			t.Errorf("status = %d, want 413", rec.Code)
		}
	})
	t.Run("default limit is 4 MiB", func(t *testing.T) {
		t.Parallel()
		h := newTestGuard(t, GuardOptions{}, Identity{})
		for size, want := range map[int]int{DefaultMaxBodyBytes: http.StatusOK, DefaultMaxBodyBytes + 1: http.StatusRequestEntityTooLarge} {
			req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "http://localhost/mcp", strings.NewReader(strings.Repeat("x", size)))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != want {
				t.Errorf("%d-byte body: status = %d, want %d", size, rec.Code, want)
			}
		}
	})
}

func TestMalformedAllowlistEntryIsAnError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		o    GuardOptions
	}{
		{"host with a path", GuardOptions{AllowedHosts: []string{"example.com/mcp"}}},
		{"host with a wildcard", GuardOptions{AllowedHosts: []string{"*.example.com"}}},
		{"unbracketed IPv6 host", GuardOptions{AllowedHosts: []string{"fd00::1"}}},
		{"host with a bad port", GuardOptions{AllowedHosts: []string{"example.com:http"}}},
		{"origin without scheme", GuardOptions{AllowedOrigins: []string{"app.example.com"}}},
		{"origin with a path", GuardOptions{AllowedOrigins: []string{"https://app.example.com/x"}}},
		{"origin with another scheme", GuardOptions{AllowedOrigins: []string{"ftp://app.example.com"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := newGuard(tt.o, Identity{}, reached); err == nil {
				t.Errorf("newGuard(%+v) = nil error, want one", tt.o)
			}
		})
	}
}

// newHTTPTestServer serves a proxy Server with one upstream tool over a
// real loopback listener, through the same handler ListenAndServe uses.
func newHTTPTestServer(t *testing.T, addr string, o HTTPOptions) *httptest.Server {
	t.Helper()
	e := newEnv(t, rules.PolicySpec{Default: "allow"}, audit.Config{}, &memorySink{})
	h, _, err := e.srv.httpHandler(addr, o)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}

// post sends one JSON-RPC message and returns the response.
func post(t *testing.T, ts *httptest.Server, session string, msg any) *http.Response {
	t.Helper()
	data, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+EndpointPath, strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set(server.HeaderKeySessionID, session)
		req.Header.Set(mcp.HeaderProtocolVersion, "2025-11-25")
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func initializeSession(t *testing.T, ts *httptest.Server) string {
	t.Helper()
	resp := post(t, ts, "", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "unit", "version": "0"},
	}})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize: status %d", resp.StatusCode)
	}
	id := resp.Header.Get(server.HeaderKeySessionID)
	if id == "" {
		t.Fatal("initialize: no Mcp-Session-Id in the response")
	}
	return id
}

func send(t *testing.T, ts *httptest.Server, method, session string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, ts.URL+EndpointPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(server.HeaderKeySessionID, session)
	req.Header.Set(mcp.HeaderProtocolVersion, "2025-11-25")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestDeletedSessionIs404(t *testing.T) {
	t.Parallel()
	ts := newHTTPTestServer(t, "127.0.0.1:0", HTTPOptions{})
	id := initializeSession(t, ts)
	ping := map[string]any{"jsonrpc": "2.0", "id": 2, "method": "ping"}
	if resp := post(t, ts, id, ping); resp.StatusCode != http.StatusOK {
		t.Fatalf("ping in a live session: status %d, want 200", resp.StatusCode)
	}
	if got := send(t, ts, http.MethodDelete, id); got != http.StatusOK {
		t.Fatalf("DELETE: status %d, want 200", got)
	}
	if resp := post(t, ts, id, ping); resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST after DELETE: status %d, want 404", resp.StatusCode)
	}
	if got := send(t, ts, http.MethodGet, id); got != http.StatusNotFound {
		t.Errorf("GET stream after DELETE: status %d, want 404", got)
	}
}

func TestMadeUpSessionIs404(t *testing.T) {
	t.Parallel()
	ts := newHTTPTestServer(t, "127.0.0.1:0", HTTPOptions{})
	made := sessionIDPrefix + "AAAAAAAAAAAAAAAAAAAAAAAAAA"
	if resp := post(t, ts, made, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "ping"}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST with a session never issued: status %d, want 404", resp.StatusCode)
	}
	if got := send(t, ts, http.MethodGet, made); got != http.StatusNotFound {
		t.Errorf("GET with a session never issued: status %d, want 404", got)
	}
}

func TestListenHostIsAllowed(t *testing.T) {
	t.Parallel()
	// Listening on a named address makes that name a valid Host; the
	// httptest server itself listens on 127.0.0.1, so Host is set by hand.
	ts := newHTTPTestServer(t, "192.0.2.7:8765", HTTPOptions{})
	for host, want := range map[string]int{"192.0.2.7:8765": http.StatusOK, "192.0.2.8:8765": http.StatusForbidden} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodHead, ts.URL+EndpointPath, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: status %d, want %d", host, resp.StatusCode, want)
		}
	}
}

func TestReadTimeoutDoesNotCutALongStream(t *testing.T) {
	t.Parallel()
	// An SSE stream outlives the server's ReadTimeout: the timeout bounds
	// reading the request only. (A WriteTimeout would cut it, so there is none.)
	const timeout = 100 * time.Millisecond
	stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(4 * timeout):
			_, _ = io.WriteString(w, "data: done\n\n")
		}
	})
	e := newEnv(t, rules.PolicySpec{Default: "allow"}, audit.Config{}, &memorySink{})
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = e.srv.newHTTPServer(stream)
	if ts.Config.WriteTimeout != 0 {
		t.Fatalf("WriteTimeout = %v, want none: it would cut SSE streams", ts.Config.WriteTimeout)
	}
	ts.Config.ReadTimeout = timeout
	ts.Start()
	defer ts.Close()
	resp, err := ts.Client().Post(ts.URL, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || string(body) != "data: done\n\n" {
		t.Errorf("stream = %q, %v; want it to end with its last event after %v", body, err, 4*timeout)
	}
}
