package proxy

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/proxy/httpguard"
	"github.com/mcpwarden/mcpwarden/proxy/streamable"
	"github.com/mcpwarden/mcpwarden/rules"
)

func sha(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// ownedSessions serves a proxy over HTTP with a global token and two
// profile tokens, and returns it with its audit sink.
func ownedSessions(t *testing.T) (*httptest.Server, *memorySink) {
	t.Helper()
	sink := &memorySink{}
	e := newEnv(t, rules.PolicySpec{Default: "allow"}, audit.Config{}, sink)
	h, _, err := streamable.NewHandler(httpHost(e.srv), "127.0.0.1:0", streamable.Options{Identity: httpguard.Identity{
		Token:    "global-token",
		Profiles: map[string]string{sha("alice-token"): "", sha("bob-token"): ""},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts, sink
}

// sendAs sends an HTTP request to the endpoint with a token ("" for none)
// and a session ID ("" for none) and returns the status and the session ID
// the response issued.
func sendAs(t *testing.T, ts *httptest.Server, method, token, session, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, ts.URL+streamable.EndpointPath, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set(server.HeaderKeySessionID, session)
		req.Header.Set(mcp.HeaderProtocolVersion, "2025-11-25")
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get(server.HeaderKeySessionID)
}

const (
	initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"unit","version":"0"}}}`
	pingBody       = `{"jsonrpc":"2.0","id":2,"method":"ping"}`
)

func TestSessionHijackWithOtherTokenIsRefused(t *testing.T) {
	t.Parallel()
	ts, sink := ownedSessions(t)
	code, id := sendAs(t, ts, http.MethodPost, "alice-token", "", initializeBody)
	if code != http.StatusOK || id == "" {
		t.Fatalf("initialize as alice: %d, session %q", code, id)
	}
	tests := []struct {
		name   string
		method string
		token  string
		want   int
	}{
		{"the owner's request is served", http.MethodPost, "alice-token", http.StatusOK},
		{"another profile token is refused", http.MethodPost, "bob-token", http.StatusForbidden},
		{"the global token is refused", http.MethodPost, "global-token", http.StatusForbidden},
		{"no token is refused before the session is looked at", http.MethodPost, "", http.StatusUnauthorized},
		{"another token cannot open the session's stream", http.MethodGet, "bob-token", http.StatusForbidden},
		{"another token cannot end the session", http.MethodDelete, "bob-token", http.StatusForbidden},
	}
	for _, tt := range tests {
		body := ""
		if tt.method == http.MethodPost {
			body = pingBody
		}
		if got, _ := sendAs(t, ts, tt.method, tt.token, id, body); got != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, got, tt.want)
		}
	}
	// The session survived the attempt to end it.
	if got, _ := sendAs(t, ts, http.MethodPost, "alice-token", id, pingBody); got != http.StatusOK {
		t.Errorf("the owner's request after the refused DELETE: status %d, want 200", got)
	}
	var refused int
	for _, e := range sink.events(t) {
		if e.Event == audit.KindDecision && e.Rule == streamable.RuleSessionOwner && e.Session == id && e.Decision == "deny" {
			refused++
		}
	}
	if refused != 4 {
		t.Errorf("audit has %d refused session requests, want 4", refused)
	}
}

// TestSessionOfAnonymousListenerStaysAnonymous: without auth every
// request is the same principal, so a session is served to anyone who
// has its ID, as before.
func TestSessionOfAnonymousListenerStaysAnonymous(t *testing.T) {
	t.Parallel()
	ts := newHTTPTestServer(t, "127.0.0.1:0", streamable.Options{})
	id := initializeSession(t, ts)
	if got, _ := sendAs(t, ts, http.MethodPost, "", id, pingBody); got != http.StatusOK {
		t.Errorf("ping in the session: status %d, want 200", got)
	}
}
