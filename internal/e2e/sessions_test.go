package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

const initializeMessage = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"abandoner","version":"0"}}}`

// postMCP sends one JSON-RPC message on session ("" for none) and
// returns the status, the session ID issued and the body.
func postMCP(t *testing.T, url, session, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(data)
}

// sessionsActive reads mcpwarden_sessions_active from a metrics endpoint.
func sessionsActive(t *testing.T, metrics string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + metrics + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "mcpwarden_sessions_active "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("/metrics has no mcpwarden_sessions_active")
	return 0
}

// TestAbandonedHTTPSessionsAreReapedLive: clients that initialize and
// leave without DELETE fill the per-principal cap; a new client is then
// served, not refused, by evicting the least recently used idle session
// (issue 40), which gets 404; once the sessions have been idle for
// http.session_idle_timeout they are ended, sessions_active falls to 0,
// an old session gets 404, and the principal can open sessions again.
func TestAbandonedHTTPSessionsAreReapedLive(t *testing.T) {
	t.Parallel()
	// The sessions must all be open before the first one expires.
	const capacity = 40
	const idle = 6 * time.Second
	f, _ := slowFixture(t, testkit.FreeAddr(t))
	metrics := testkit.FreeAddr(t)
	f.appendConfig(t, fmt.Sprintf("metrics:\n  listen: %q\nhttp:\n  session_idle_timeout: %s\n  max_sessions_per_principal: %d\n", metrics, idle, capacity))
	url, _ := startHTTP(t, f)

	var sessions []string
	for range capacity {
		code, id, body := postMCP(t, url, "", initializeMessage)
		if code != http.StatusOK || id == "" {
			t.Fatalf("initialize %d: status %d: %s", len(sessions), code, body)
		}
		if code, _, body := postMCP(t, url, id, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); code != http.StatusOK {
			t.Fatalf("tools/list: status %d: %s", code, body)
		}
		sessions = append(sessions, id)
	}
	abandoned := time.Now()
	if code, id, body := postMCP(t, url, "", initializeMessage); code != http.StatusOK || id == "" {
		t.Errorf("initialize over the cap with every session idle: status %d, %q; want it served by evicting the oldest idle session", code, body)
	}
	if code, _, _ := postMCP(t, url, sessions[0], `{"jsonrpc":"2.0","id":3,"method":"ping"}`); code != http.StatusNotFound {
		t.Errorf("ping on the least recently used session after the eviction: status %d, want 404", code)
	}
	if n := sessionsActive(t, metrics); n != capacity {
		t.Errorf("sessions_active = %v with %d sessions open, want %d", n, capacity, capacity)
	}
	for deadline := abandoned.Add(idle + 15*time.Second); sessionsActive(t, metrics) != 0; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("sessions_active is %v %s after the last request (idle timeout %s)", sessionsActive(t, metrics), time.Since(abandoned).Round(time.Second), idle)
		}
	}
	t.Logf("%d abandoned sessions ended %s after the last request (idle timeout %s)", capacity, time.Since(abandoned).Round(100*time.Millisecond), idle)
	if code, _, _ := postMCP(t, url, sessions[1], `{"jsonrpc":"2.0","id":3,"method":"ping"}`); code != http.StatusNotFound {
		t.Errorf("ping on an ended session: status %d, want 404", code)
	}
	if code, id, body := postMCP(t, url, "", initializeMessage); code != http.StatusOK || id == "" {
		t.Errorf("initialize once the abandoned sessions ended: status %d: %s", code, body)
	}
}
