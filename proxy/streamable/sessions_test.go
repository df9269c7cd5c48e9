package streamable

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/state/memory"
	stateredis "github.com/mcpwarden/mcpwarden/internal/state/redis"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/proxy/sessiontable"
)

// principalLocal is the principal of every request localSessions serves,
// as proxy's stdio principal.
const principalLocal = "local"

// localSessions are the sessions of a listener whose every request comes
// from principalLocal, without shared state; refusals are dropped.
func localSessions(ids *sessiontable.Table) *Sessions {
	return &Sessions{
		ids: ids, logger: slog.New(slog.DiscardHandler), peers: alone{},
		principalOf: func(context.Context) string { return principalLocal },
		profileOf:   func(context.Context) string { return "" },
		audit:       func(context.Context, audit.Event) {},
	}
}

// reached is the handler behind the guard: it answers 200.
var reached = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })

// pingBody is a ping request.
const pingBody = `{"jsonrpc":"2.0","id":1,"method":"ping"}`

// forEachStore runs test against each store replicas share, in parallel:
// memory, and Redis on a redis-server of the test's own (a missing
// redis-server fails the test).
func forEachStore(t *testing.T, test func(t *testing.T, store state.Store)) {
	t.Helper()
	stores := []struct {
		name string
		open func(t *testing.T) state.Store
	}{
		{"memory", func(t *testing.T) state.Store {
			s := memory.New()
			t.Cleanup(func() { s.Close() })
			return s
		}},
		{"redis", func(t *testing.T) state.Store {
			s, err := stateredis.Open(t.Context(), stateredis.Options{URL: testkit.StartRedis(t).URL(), Poll: 50e6})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			test(t, st.open(t))
		})
	}
}

// TestUnownedLiveSessionIsRefused: a live session whose owner was never
// recorded fails closed instead of serving whoever names it.
func TestUnownedLiveSessionIsRefused(t *testing.T) {
	t.Parallel()
	ids := sessiontable.New(sessiontable.Limits{})
	id := ids.Generate()
	h := localSessions(ids).guard(reached)
	req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(pingBody))
	req.Header.Set(server.HeaderKeySessionID, id)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden {
		t.Errorf("request on an unowned session: status %d, want 403", rec.Code)
	}
	res, _, err := ids.Reserve(principalLocal)
	if err != nil {
		t.Fatal(err)
	}
	ids.Claim(id, res)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("request by the owner once bound: status %d, want 200", rec.Code)
	}
}

func TestRequestIDClaimedByOneReplicaIsWithheldByAnother(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, store state.Store) {
		replica := func() *replicated {
			return newReplicated(&Sessions{logger: slog.New(slog.DiscardHandler)}, store)
		}
		a, b := replica(), replica()
		chunk := []byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"elicitation/create\",\"params\":{}}\n\n")
		ctx, cancel := context.WithCancel(t.Context())
		ra := &relayed{rp: a, session: "s1", header: http.Header{}, ctx: ctx}
		rb := &relayed{rp: b, session: "s1", header: http.Header{}, ctx: ctx}
		if !ra.claimAll(chunk) {
			t.Fatal("the first replica could not claim request 7")
		}
		if rb.claimAll(chunk) {
			t.Error("a second replica claimed request 7 of the same session: the client's answer could reach the wrong request")
		}
		// Another session's request 7 is another request.
		rc := &relayed{rp: b, session: "s2", header: http.Header{}, ctx: ctx}
		if !rc.claimAll(chunk) {
			t.Error("request 7 of another session could not be claimed")
		}
		// A notification carries nothing to claim.
		if !rb.claimAll([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n")) {
			t.Error("a notification was withheld")
		}
		cancel()
		ra.done()
		rb.done()
		rc.done()
		// Withdrawn with the request that made it: the ID is free again.
		ctx, cancel = context.WithCancel(t.Context())
		rd := &relayed{rp: b, session: "s1", header: http.Header{}, ctx: ctx}
		if !rd.claimAll(chunk) {
			t.Error("request 7 stayed claimed after the request that claimed it ended")
		}
		cancel()
		rd.done()
	})
}
