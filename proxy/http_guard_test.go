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
	"github.com/mcpwarden/mcpwarden/proxy/sessiontable"
	"github.com/mcpwarden/mcpwarden/proxy/streamable"
	"github.com/mcpwarden/mcpwarden/rules"
)

// reached is a handler that answers 200 with the body it read, so a test
// sees both whether a request got through and what of it.
var reached = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("X-Reached", "yes")
	_, _ = w.Write(body)
})

// newHTTPTestServer serves a proxy Server with one upstream tool over a
// real loopback listener, through the same handler ListenAndServe uses.
func newHTTPTestServer(t *testing.T, addr string, o streamable.Options) *httptest.Server {
	t.Helper()
	e := newEnv(t, rules.PolicySpec{Default: "allow"}, audit.Config{}, &memorySink{})
	h, _, err := streamable.NewHandler(httpHost(e.srv), addr, o)
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
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+streamable.EndpointPath, strings.NewReader(string(data)))
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
	req, err := http.NewRequestWithContext(t.Context(), method, ts.URL+streamable.EndpointPath, nil)
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
	ts := newHTTPTestServer(t, "127.0.0.1:0", streamable.Options{})
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
	ts := newHTTPTestServer(t, "127.0.0.1:0", streamable.Options{})
	made := sessiontable.IDPrefix + "AAAAAAAAAAAAAAAAAAAAAAAAAA"
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
	ts := newHTTPTestServer(t, "192.0.2.7:8765", streamable.Options{})
	for host, want := range map[string]int{"192.0.2.7:8765": http.StatusOK, "192.0.2.8:8765": http.StatusForbidden} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodHead, ts.URL+streamable.EndpointPath, nil)
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
	ts.Config = streamable.NewServer(stream, e.srv.logger)
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
