package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/telemetry"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/upstream"

	"github.com/mcpwarden/mcpwarden/proxy/httpguard"
	"github.com/mcpwarden/mcpwarden/proxy/sessiontable"
	"github.com/mcpwarden/mcpwarden/proxy/streamable"
	"github.com/mcpwarden/mcpwarden/rules"
)

// A sessionEnv is a proxy with telemetry and no upstream, for tests of
// the HTTP listener's sessions.
type sessionEnv struct {
	srv *Server
	tel *telemetry.Telemetry
}

// active reads the sessions_active gauge.
func (e *sessionEnv) active(tb testing.TB) float64 {
	tb.Helper()
	rec := httptest.NewRecorder()
	e.tel.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, telemetry.MetricsPath, nil))
	for line := range strings.SplitSeq(rec.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(line, "mcpwarden_sessions_active "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return n
		}
	}
	tb.Fatalf("no mcpwarden_sessions_active in the metrics:\n%s", rec.Body)
	return 0
}

// noUpstream is an Upstream with no servers.
type noUpstream struct{}

func (noUpstream) Names() []string                  { return nil }
func (noUpstream) Tools(string) ([]mcp.Tool, error) { return nil, errors.New("no such server") }
func (noUpstream) Call(context.Context, string, *upstream.Route, mcp.CallToolParams) (json.RawMessage, error) {
	return nil, errors.New("no such server")
}
func (noUpstream) Session(string) (*client.Client, mcp.ServerCapabilities, error) {
	return nil, mcp.ServerCapabilities{}, errors.New("no such server")
}
func (noUpstream) Request(context.Context, string, *upstream.Route, func(context.Context, *client.Client, mcp.ServerCapabilities) (any, error)) (any, error) {
	return nil, errors.New("no such server")
}
func (noUpstream) EndSession(string)                    {}
func (noUpstream) RootsChanged(context.Context, string) {}
func (noUpstream) Protocol(string) string               { return "" }

// reapedServer serves a proxy with telemetry over HTTP with limits,
// reaping idle sessions until the test ends.
func reapedServer(tb testing.TB, limits sessiontable.Limits, identity httpguard.Identity) (*sessionEnv, *streamable.Sessions, *httptest.Server) {
	tb.Helper()
	tel, err := telemetry.New(telemetry.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = tel.Shutdown(context.WithoutCancel(tb.Context())) })
	p, err := rules.Compile(rules.Spec{Global: rules.PolicySpec{Default: "allow"}})
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := New(Options{Upstream: noUpstream{}, Policy: p, Audit: audit.New(&memorySink{}, audit.Config{}), Telemetry: tel})
	if err != nil {
		tb.Fatal(err)
	}
	h, hs, err := streamable.NewHandler(httpHost(srv), "127.0.0.1:0", streamable.Options{Sessions: limits, Identity: identity})
	if err != nil {
		tb.Fatal(err)
	}
	ts := httptest.NewServer(h)
	ctx, cancel := context.WithCancel(context.WithoutCancel(tb.Context()))
	var wg sync.WaitGroup
	wg.Go(func() { hs.Reap(ctx) })
	tb.Cleanup(func() { cancel(); wg.Wait(); ts.Close() })
	return &sessionEnv{srv: srv, tel: tel}, hs, ts
}

// exchange sends one message as a client would and returns the status,
// the session ID the response issued and the body.
func exchange(ctx context.Context, ts *httptest.Server, method, token, session, body string) (int, string, string, error) {
	req, err := http.NewRequestWithContext(ctx, method, ts.URL+streamable.EndpointPath, strings.NewReader(body))
	if err != nil {
		return 0, "", "", err
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
		return 0, "", "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get(server.HeaderKeySessionID), string(data), err
}

// abandon opens a session, uses it once (so the proxy knows it) and
// leaves without DELETE, as a crashed or careless client does.
func abandon(ctx context.Context, ts *httptest.Server, token string) (string, error) {
	code, id, body, err := exchange(ctx, ts, http.MethodPost, token, "", initializeBody)
	if err != nil || code != http.StatusOK || id == "" {
		return "", fmt.Errorf("initialize: status %d, session %q, err %v: %s", code, id, err, body)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if code, _, body, err := exchange(ctx, ts, http.MethodPost, token, id, list); err != nil || code != http.StatusOK {
		return "", fmt.Errorf("tools/list: status %d, err %v: %s", code, err, body)
	}
	return id, nil
}

// sessionTables counts what the proxy holds for sessions, in every table
// that has a row per session.
func sessionTables(e *sessionEnv, hs *streamable.Sessions) map[string]int {
	live, principals, reserved := hs.IDs().Counts()
	e.srv.sessions.mu.Lock()
	known := len(e.srv.sessions.byID)
	e.srv.sessions.mu.Unlock()
	grants := e.srv.asker.Waiting.Len()
	roots := e.srv.roots.Len()
	e.srv.relay.mu.Lock()
	routes := len(e.srv.relay.tokens)
	inFlight := 0
	for _, calls := range e.srv.relay.active {
		inFlight += len(calls)
	}
	e.srv.relay.mu.Unlock()
	return map[string]int{
		"live session IDs":            live,
		"principals holding sessions": principals,
		"reservations":                reserved,
		"known client sessions":       known,
		"session grants":              grants,
		"client roots cached":         roots,
		"progress routes":             routes,
		"requests in flight":          inFlight,
	}
}

func TestAbandonedSessionsAreReaped(t *testing.T) {
	t.Parallel()
	const sessions, clients = 2000, 8
	// Long enough that no session is reaped between its two requests on a
	// loaded machine, short enough to wait for.
	const idle = 2 * time.Second
	e, hs, ts := reapedServer(t, sessiontable.Limits{IdleTimeout: idle, Max: 2 * sessions, MaxPerPrincipal: 2 * sessions}, httpguard.Identity{})

	ids := make(chan string, sessions)
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for range sessions / clients {
				id, err := abandon(t.Context(), ts, "")
				if err != nil {
					errs <- err
					return
				}
				ids <- id
			}
		})
	}
	wg.Wait()
	close(ids)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	start := time.Now()
	deadline := start.Add(idle + 10*time.Second)
	for {
		tables := sessionTables(e, hs)
		gauge := e.active(t)
		empty := gauge == 0
		for _, n := range tables {
			empty = empty && n == 0
		}
		if empty {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s after the last request (idle timeout %s): sessions_active %v, tables %v", time.Since(start).Round(time.Millisecond), idle, gauge, tables)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("%d abandoned sessions reaped within %s of the last request (idle timeout %s)", sessions, time.Since(start).Round(time.Millisecond), idle)

	// A client that comes back is told its session is gone, and can start again.
	id := <-ids
	ping := pingBody
	if code, _, _, err := exchange(t.Context(), ts, http.MethodPost, "", id, ping); err != nil || code != http.StatusNotFound {
		t.Errorf("ping on a reaped session: status %d, err %v; want 404", code, err)
	}
	if code, _, _, err := exchange(t.Context(), ts, http.MethodGet, "", id, ""); err != nil || code != http.StatusNotFound {
		t.Errorf("GET on a reaped session: status %d, err %v; want 404", code, err)
	}
	if _, err := abandon(t.Context(), ts, ""); err != nil {
		t.Errorf("a new session after reaping: %v", err)
	}
}

// TestSessionInUseIsNotReaped: the idle timeout counts from the end of a
// session's last request, so neither a session whose client keeps
// talking nor one with a request still in progress (a listening stream)
// is ended under it.
func TestSessionInUseIsNotReaped(t *testing.T) {
	t.Parallel()
	const idle = 2 * time.Second
	_, _, ts := reapedServer(t, sessiontable.Limits{IdleTimeout: idle}, httpguard.Identity{})
	chatty, err := abandon(t.Context(), ts, "")
	if err != nil {
		t.Fatal(err)
	}
	listening, err := abandon(t.Context(), ts, "")
	if err != nil {
		t.Fatal(err)
	}
	streamCtx, stopStream := context.WithCancel(t.Context())
	defer stopStream()
	streaming := make(chan struct{})
	go func() {
		defer close(streaming)
		req, err := http.NewRequestWithContext(streamCtx, http.MethodGet, ts.URL+streamable.EndpointPath, nil)
		if err != nil {
			return
		}
		req.Header.Set(server.HeaderKeySessionID, listening)
		req.Header.Set(mcp.HeaderProtocolVersion, "2025-11-25")
		req.Header.Set("Accept", "text/event-stream")
		if resp, err := ts.Client().Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	for end := time.Now().Add(3 * idle); time.Now().Before(end); time.Sleep(idle / 5) {
		if code, _, body, err := exchange(t.Context(), ts, http.MethodPost, "", chatty, pingBody); err != nil || code != http.StatusOK {
			t.Fatalf("ping every %s with idle timeout %s: status %d, err %v: %s", idle/5, idle, code, err, body)
		}
	}
	if code, _, body, err := exchange(t.Context(), ts, http.MethodPost, "", listening, pingBody); err != nil || code != http.StatusOK {
		t.Errorf("ping on a session whose stream was open for %s (idle timeout %s): status %d, err %v: %s", 3*idle, idle, code, err, body)
	}
	stopStream()
	<-streaming
}

// TestSessionCapRefusesWithClearError: a cap refuses a new session only
// when every session under it is busy (here, each holds a GET stream
// open), so that none can be evicted.
func TestSessionCapRefusesWithClearError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		limits   sessiontable.Limits
		first    string // token opening sessions up to the cap
		then     string // token of the refused initialize
		other    string // token still served, "" for none
		status   int
		setting  string
		capacity int
	}{
		{"a principal at its cap with every session busy is refused with 429", sessiontable.Limits{MaxPerPrincipal: 3, Max: 10}, "alice-token", "alice-token", "bob-token", http.StatusTooManyRequests, "http.max_sessions_per_principal", 3},
		{"everyone at the overall cap with every session busy is refused with 503", sessiontable.Limits{MaxPerPrincipal: 10, Max: 4}, "alice-token", "bob-token", "", http.StatusServiceUnavailable, "http.max_sessions", 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, hs, ts := reapedServer(t, tt.limits, httpguard.Identity{Profiles: map[string]string{sha("alice-token"): "", sha("bob-token"): ""}})
			var opened []string
			for range tt.capacity {
				id, err := abandon(t.Context(), ts, tt.first)
				if err != nil {
					t.Fatal(err)
				}
				opened = append(opened, id)
				holdBusy(t, hs, ts, tt.first, id)
			}
			code, id, body, err := exchange(t.Context(), ts, http.MethodPost, tt.then, "", initializeBody)
			if err != nil {
				t.Fatal(err)
			}
			if code != tt.status || id != "" || !strings.Contains(body, tt.setting) || !strings.Contains(body, fmt.Sprint(tt.capacity)) {
				t.Errorf("initialize over the cap: status %d, session %q, body %q; want %d naming %s and %d", code, id, body, tt.status, tt.setting, tt.capacity)
			}
			if tt.other != "" {
				if _, err := abandon(t.Context(), ts, tt.other); err != nil {
					t.Errorf("another principal under its own cap: %v", err)
				}
			}
			// The sessions open are still served, and ending one frees its place.
			if code, _, body, err := exchange(t.Context(), ts, http.MethodPost, tt.first, opened[0], pingBody); err != nil || code != http.StatusOK {
				t.Errorf("ping on a session open before the cap: status %d, err %v: %s", code, err, body)
			}
			if code, _, _, err := exchange(t.Context(), ts, http.MethodDelete, tt.first, opened[0], ""); err != nil || code != http.StatusOK {
				t.Fatalf("DELETE: status %d, err %v", code, err)
			}
			if _, err := abandon(t.Context(), ts, tt.then); err != nil {
				t.Errorf("initialize once a session ended: %v", err)
			}
			if live, _, reserved := hs.IDs().Counts(); reserved != 0 || live > tt.capacity+1 {
				t.Errorf("after the test: %d live sessions, %d reservations", live, reserved)
			}
		})
	}
}

// TestInitializeOnASessionCannotPassTheCap: an initialize sent with an
// existing session's ID makes mcp-go issue another session without the
// guard reserving a place first; it counts against the cap like any
// other, and over it, with every session busy (the one it was sent on,
// and one holding a GET stream), the client gets 429 instead of the
// session, which is ended at once.
func TestInitializeOnASessionCannotPassTheCap(t *testing.T) {
	t.Parallel()
	const capacity = 2
	e, hs, ts := reapedServer(t, sessiontable.Limits{MaxPerPrincipal: capacity}, httpguard.Identity{})
	first, err := abandon(t.Context(), ts, "")
	if err != nil {
		t.Fatal(err)
	}
	code, second, body, err := exchange(t.Context(), ts, http.MethodPost, "", first, initializeBody)
	if err != nil || code != http.StatusOK || second == "" {
		t.Fatalf("initialize on a session under the cap: status %d, session %q, err %v: %s", code, second, err, body)
	}
	if code, _, body, err := exchange(t.Context(), ts, http.MethodPost, "", second, pingBody); err != nil || code != http.StatusOK {
		t.Errorf("ping on the session issued under the cap: status %d, err %v: %s", code, err, body)
	}
	holdBusy(t, hs, ts, "", second)
	for range 4 {
		code, issued, body, err := exchange(t.Context(), ts, http.MethodPost, "", first, initializeBody)
		if err != nil {
			t.Fatal(err)
		}
		if code != http.StatusTooManyRequests || issued != "" || !strings.Contains(body, "http.max_sessions_per_principal") {
			t.Errorf("initialize on a session over the cap: status %d, session %q, body %q; want 429 naming the setting and no session", code, issued, body)
		}
	}
	if live, _, reserved := hs.IDs().Counts(); live != capacity || reserved != 0 {
		t.Errorf("%d live sessions and %d reservations after initializes sent on a session, want %d and 0", live, reserved, capacity)
	}
	testkit.Eventually(t, 5*time.Second, "the sessions over the cap unregistered", func() bool { return e.active(t) == capacity })
}

// TestGETWithoutSessionCannotFillTheSessionTable: mcp-go mints a session
// ID for a GET stream that names none and never sends it, so each such
// GET would leave a live session no one owns, counted against
// http.max_sessions until the idle timeout. Such a GET gets 400, and the
// table stays empty.
func TestGETWithoutSessionCannotFillTheSessionTable(t *testing.T) {
	t.Parallel()
	const capacity = 5
	_, hs, ts := reapedServer(t, sessiontable.Limits{Max: capacity}, httpguard.Identity{})
	for range 2 * capacity {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second) // a stream would not end
		code, _, body, err := exchange(ctx, ts, http.MethodGet, "", "", "")
		cancel()
		if err != nil || code != http.StatusBadRequest || !strings.Contains(body, "Mcp-Session-Id") {
			t.Fatalf("GET without a session: status %d, err %v, body %q; want 400 asking for Mcp-Session-Id", code, err, body)
		}
	}
	if live, _, reserved := hs.IDs().Counts(); live != 0 || reserved != 0 {
		t.Errorf("after GETs without a session: %d live sessions, %d reservations; want none", live, reserved)
	}
	if _, err := abandon(t.Context(), ts, ""); err != nil {
		t.Errorf("initialize after GETs without a session: %v", err)
	}
}
