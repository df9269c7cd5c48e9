package proxy

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/proxy/httpguard"
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
	h, _, err := e.srv.httpHandler("127.0.0.1:0", HTTPOptions{Identity: httpguard.Identity{
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
	req, err := http.NewRequestWithContext(t.Context(), method, ts.URL+EndpointPath, strings.NewReader(body))
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
		if e.Event == audit.KindDecision && e.Rule == ruleSessionOwner && e.Session == id && e.Decision == "deny" {
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
	ts := newHTTPTestServer(t, "127.0.0.1:0", HTTPOptions{})
	id := initializeSession(t, ts)
	if got, _ := sendAs(t, ts, http.MethodPost, "", id, pingBody); got != http.StatusOK {
		t.Errorf("ping in the session: status %d, want 200", got)
	}
}

// TestUnownedLiveSessionIsRefused: a live session whose owner was never
// recorded fails closed instead of serving whoever names it.
func TestUnownedLiveSessionIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, rules.PolicySpec{Default: "allow"}, audit.Config{}, &memorySink{})
	ids := newSessionIDs(SessionLimits{})
	id := ids.Generate()
	h := e.srv.sessionGuard(&httpSessions{ids: ids, logger: e.srv.logger}, reached)
	req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(pingBody))
	req.Header.Set(server.HeaderKeySessionID, id)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden {
		t.Errorf("request on an unowned session: status %d, want 403", rec.Code)
	}
	res, _, err := ids.reserve(PrincipalLocal)
	if err != nil {
		t.Fatal(err)
	}
	ids.claim(id, res)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("request by the owner once bound: status %d, want 200", rec.Code)
	}
}

// TestSessionTableExpiresOnlyIdleSessions drives the table's clock by
// hand: a session is idle from when its ID is sent or its last request
// ended, never while a request is in progress.
func TestSessionTableExpiresOnlyIdleSessions(t *testing.T) {
	t.Parallel()
	const idle = time.Minute
	ids := newSessionIDs(SessionLimits{IdleTimeout: idle})
	open := func() string {
		res, _, err := ids.reserve("p")
		if err != nil {
			t.Fatal(err)
		}
		id := ids.Generate()
		if !ids.claim(id, res) {
			t.Fatal("claim failed")
		}
		return id
	}
	quiet, busy, ended := open(), open(), open()
	if live, owned := ids.begin(busy, "p"); !live || !owned {
		t.Fatal("begin on an owned session failed")
	}
	if live, owned := ids.begin(ended, "p"); !live || !owned {
		t.Fatal("begin on an owned session failed")
	}
	ids.end(ended)
	if got := ids.expire(time.Now().Add(idle / 2)); len(got) != 0 {
		t.Errorf("expired %v before the idle timeout", got)
	}
	got := ids.expire(time.Now().Add(idle + time.Second))
	slices.Sort(got)
	want := []string{quiet, ended}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("expired %v, want the quiet and the ended sessions %v, not the busy one %s", got, want, busy)
	}
	if _, err := ids.Validate(quiet); err == nil {
		t.Error("an expired session still validates")
	}
	if live, principals, reserved := ids.counts(); live != 1 || principals != 1 || reserved != 0 {
		t.Errorf("after expiry: %d live, %d principals, %d reservations; want the busy session only", live, principals, reserved)
	}
	ids.end(busy)
	if got := ids.expire(time.Now().Add(idle + time.Second)); len(got) != 1 || got[0] != busy {
		t.Errorf("expired %v once the busy session's request ended, want it", got)
	}
	if live, principals, _ := ids.counts(); live != 0 || principals != 0 {
		t.Errorf("after every session expired: %d live, %d principals", live, principals)
	}
}

func TestSessionTableReservesUnderBothCaps(t *testing.T) {
	t.Parallel()
	ids := newSessionIDs(SessionLimits{MaxPerPrincipal: 2, Max: 3})
	a1, _, err := ids.reserve("a")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ids.reserve("a"); err != nil {
		t.Fatal(err)
	}
	var le *SessionLimitError
	if _, _, err := ids.reserve("a"); !errors.As(err, &le) || le.Setting != "http.max_sessions_per_principal" || le.Status != http.StatusTooManyRequests {
		t.Errorf("a third reservation of a: %v, want the per-principal cap", err)
	}
	if _, _, err := ids.reserve("b"); err != nil {
		t.Fatalf("b under both caps: %v", err)
	}
	if _, _, err := ids.reserve("c"); !errors.As(err, &le) || le.Setting != "http.max_sessions" || le.Status != http.StatusServiceUnavailable {
		t.Errorf("a fourth reservation: %v, want the overall cap", err)
	}
	ids.release(a1)
	ids.release(a1) // twice is once
	if _, _, err := ids.reserve("c"); err != nil {
		t.Errorf("after a release: %v", err)
	}
	if _, principals, reserved := ids.counts(); principals != 3 || reserved != 3 {
		t.Errorf("%d principals, %d reservations; want 3 and 3", principals, reserved)
	}
}
