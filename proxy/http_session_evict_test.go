package proxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/telemetry"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/proxy/httpguard"
	"github.com/mcpwarden/mcpwarden/proxy/sessiontable"
	"github.com/mcpwarden/mcpwarden/proxy/streamable"
	"github.com/mcpwarden/mcpwarden/rules"
)

// evicted reads mcpwarden_sessions_evicted_total for cap.
func (e *sessionEnv) evicted(tb testing.TB, cap string) float64 {
	tb.Helper()
	rec := httptest.NewRecorder()
	e.tel.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, telemetry.MetricsPath, nil))
	prefix := `mcpwarden_sessions_evicted_total{cap="` + cap + `"} `
	for line := range strings.SplitSeq(rec.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return n
		}
	}
	tb.Fatalf("no %s in the metrics:\n%s", prefix, rec.Body)
	return 0
}

// holdBusy opens a GET stream on session id, which keeps it busy, until
// the test ends; it returns once the listener counts the session busy.
func holdBusy(t *testing.T, hs *streamable.Sessions, ts *httptest.Server, token, id string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	before := len(hs.IDs().BusyIDs())
	go func() {
		defer close(done)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+streamable.EndpointPath, nil)
		if err != nil {
			return
		}
		req.Header.Set(server.HeaderKeySessionID, id)
		req.Header.Set(mcp.HeaderProtocolVersion, "2025-11-25")
		req.Header.Set("Accept", "text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if resp, err := ts.Client().Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	testkit.Eventually(t, 5*time.Second, "the GET stream to hold its session busy", func() bool { return len(hs.IDs().BusyIDs()) > before })
}

// TestIdleSessionsDoNotLockOutANewClient: sessions left open by clients
// that went away (the MCP Inspector CLI leaves one per run) fill a cap;
// a new client is not refused: the least recently used idle session is
// ended to make room, its client gets 404 (and would initialize again),
// and the eviction is counted. Over both caps.
func TestIdleSessionsDoNotLockOutANewClient(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		limits sessiontable.Limits
		first  string // token opening sessions up to the cap
		then   string // token of the new client
		cap    string
	}{
		{"An anonymous listener at the principal cap evicts the least recently used idle session.", sessiontable.Limits{MaxPerPrincipal: 3, Max: 10}, "", "", "principal"},
		{"Everyone at the overall cap evicts the least recently used idle session.", sessiontable.Limits{MaxPerPrincipal: 10, Max: 3}, "alice-token", "bob-token", "global"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			identity := httpguard.Identity{}
			if tt.first != "" {
				identity = httpguard.Identity{Profiles: map[string]string{sha("alice-token"): "", sha("bob-token"): ""}}
			}
			e, hs, ts := reapedServer(t, tt.limits, identity)
			var opened []string
			for range 3 {
				id, err := abandon(t.Context(), ts, tt.first)
				if err != nil {
					t.Fatal(err)
				}
				opened = append(opened, id)
			}
			// The oldest is used again: the second is now the least recently used.
			if code, _, body, err := exchange(t.Context(), ts, http.MethodPost, tt.first, opened[0], pingBody); err != nil || code != http.StatusOK {
				t.Fatalf("ping: status %d, err %v: %s", code, err, body)
			}
			if _, err := abandon(t.Context(), ts, tt.then); err != nil {
				t.Fatalf("a new client with every place taken by idle sessions: %v", err)
			}
			code, _, _, err := exchange(t.Context(), ts, http.MethodPost, tt.first, opened[1], pingBody)
			if err != nil || code != http.StatusNotFound {
				t.Errorf("the least recently used session after its eviction: status %d, err %v; want 404", code, err)
			}
			for _, id := range []string{opened[0], opened[2]} {
				if code, _, body, err := exchange(t.Context(), ts, http.MethodPost, tt.first, id, pingBody); err != nil || code != http.StatusOK {
					t.Errorf("a session used more recently: status %d, err %v: %s", code, err, body)
				}
			}
			if n := e.evicted(t, tt.cap); n != 1 {
				t.Errorf("mcpwarden_sessions_evicted_total{cap=%q} = %v, want 1", tt.cap, n)
			}
			if live, _, reserved := hs.IDs().Counts(); live != 3 || reserved != 0 {
				t.Errorf("%d live sessions and %d reservations, want 3 and 0", live, reserved)
			}
			testkit.Eventually(t, 5*time.Second, "the evicted session unregistered", func() bool { return e.active(t) == 3 })
		})
	}
}

// TestEvictedSessionIsNotAdoptedByAnotherReplica: with shared state an
// evicted session ends everywhere, as a DELETE ends it, so that its client
// gets 404 from every replica — rather than another replica adopting it
// from its shared record, beside the caps.
func TestEvictedSessionIsNotAdoptedByAnotherReplica(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, store state.Store) {
		rs := newReplicas(t, 2, store, rules.PolicySpec{Default: "allow"}, streamable.Options{Sessions: sessiontable.Limits{MaxPerPrincipal: 1}}, nil)
		_, first := sendAs(t, rs.ts[0], http.MethodPost, "", "", initializeBody)
		_, second := sendAs(t, rs.ts[0], http.MethodPost, "", "", initializeBody)
		if first == "" || second == "" {
			t.Fatalf("sessions %q and %q; want both issued, the second evicting the first", first, second)
		}
		for i, ts := range rs.ts {
			if got, _ := sendAs(t, ts, http.MethodPost, "", first, pingBody); got != http.StatusNotFound {
				t.Errorf("the evicted session on replica %d: %d, want 404", i, got)
			}
		}
		if got, _ := sendAs(t, rs.ts[1], http.MethodPost, "", second, pingBody); got != http.StatusOK {
			t.Errorf("the new session on the other replica: %d, want 200", got)
		}
	})
}
