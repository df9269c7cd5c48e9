package proxy

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/proxy/httpguard"
	"github.com/mcpwarden/mcpwarden/proxy/sessiontable"
	"github.com/mcpwarden/mcpwarden/proxy/streamable"
	"github.com/mcpwarden/mcpwarden/rules"
)

func TestSessionInitializedOnOneReplicaServedByAnother(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, store state.Store) {
		rs := newReplicas(t, 2, store, rules.PolicySpec{Allow: []string{"mcp:up:echo"}, Ask: []string{"mcp:up:write"}}, streamable.Options{}, nil)
		b := newBalancer(rs)
		asked := 0
		h := elicitFunc(func(req mcp.ElicitationRequest) *mcp.ElicitationResult {
			asked++
			return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"decision": "allow_once"}}}
		})
		b.to(0)
		c := b.client(t, client.WithElicitationHandler(h))
		b.to(1)
		if got := testkit.Text(testkit.CallTool(t, c, "up__echo", map[string]any{"text": "hi"})); !strings.Contains(got, "hi") {
			t.Errorf("echo on the other replica: %q", got)
		}
		// The other replica knows the client can be asked: it elicits.
		res := testkit.CallTool(t, c, "up__write", map[string]any{"path": "/tmp/x"})
		if asked != 1 || res.IsError {
			t.Errorf("write on the other replica: asked %d times, result %q; want one form and the call forwarded", asked, testkit.Text(res))
		}
		if b.sent[1].Load() < 2 {
			t.Fatalf("replica 1 got %d requests", b.sent[1].Load())
		}
		var onB []audit.Event
		for _, e := range rs.sinks[1].events(t) {
			if e.Event == audit.KindDecision {
				onB = append(onB, e)
			}
		}
		if len(onB) != 2 {
			t.Fatalf("replica 1 audited %d decisions, want 2", len(onB))
		}
		for _, e := range onB {
			if e.Client == nil || e.Client.Name != "unit" || e.Session == "" {
				t.Errorf("replica 1 audited %s with client %v, session %q; want the client's name from initialize on replica 0", e.Tool, e.Client, e.Session)
			}
		}
	})
}

// twoTokenReplicas starts two replicas accepting alice's and bob's tokens.
func twoTokenReplicas(t *testing.T, store state.Store) *replicaSet {
	t.Helper()
	return newReplicas(t, 2, store, rules.PolicySpec{Default: "allow"}, streamable.Options{Identity: httpguard.Identity{
		Profiles: map[string]string{sha("alice-token"): "", sha("bob-token"): ""},
	}}, nil)
}

func TestSessionHijackOnAnotherReplicaIsRefused(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, store state.Store) {
		rs := twoTokenReplicas(t, store)
		code, id := sendAs(t, rs.ts[0], http.MethodPost, "alice-token", "", initializeBody)
		if code != http.StatusOK || id == "" {
			t.Fatalf("initialize as alice: %d, session %q", code, id)
		}
		tests := []struct {
			name   string
			method string
			token  string
			want   int
		}{
			{"bob's request on the other replica is refused", http.MethodPost, "bob-token", http.StatusForbidden},
			{"bob cannot open the session's stream on the other replica", http.MethodGet, "bob-token", http.StatusForbidden},
			{"bob cannot end the session on the other replica", http.MethodDelete, "bob-token", http.StatusForbidden},
			{"alice's request on the other replica is served", http.MethodPost, "alice-token", http.StatusOK},
		}
		for _, tt := range tests {
			body := ""
			if tt.method == http.MethodPost {
				body = pingBody
			}
			if got, _ := sendAs(t, rs.ts[1], tt.method, tt.token, id, body); got != tt.want {
				t.Errorf("%s: status %d, want %d", tt.name, got, tt.want)
			}
		}
	})
}

func TestSessionEndedOnOneReplicaIsGoneOnAnother(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, store state.Store) {
		rs := twoTokenReplicas(t, store)
		_, id := sendAs(t, rs.ts[0], http.MethodPost, "alice-token", "", initializeBody)
		if got, _ := sendAs(t, rs.ts[1], http.MethodPost, "alice-token", id, pingBody); got != http.StatusOK {
			t.Fatalf("ping on replica 1: %d", got)
		}
		if got, _ := sendAs(t, rs.ts[1], http.MethodDelete, "alice-token", id, ""); got != http.StatusOK {
			t.Fatalf("DELETE on replica 1: %d", got)
		}
		for i, ts := range rs.ts {
			if got, _ := sendAs(t, ts, http.MethodPost, "alice-token", id, pingBody); got != http.StatusNotFound {
				t.Errorf("ping on replica %d after the DELETE: %d, want 404", i, got)
			}
		}
	})
}

func TestMadeUpSessionIsUnknownOnEveryReplica(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, store state.Store) {
		rs := twoTokenReplicas(t, store)
		for i, ts := range rs.ts {
			if got, _ := sendAs(t, ts, http.MethodPost, "alice-token", sessiontable.IDPrefix+"AAAAAAAAAAAAAAAAAAAAAAAAAA", pingBody); got != http.StatusNotFound {
				t.Errorf("made-up session on replica %d: %d, want 404", i, got)
			}
		}
	})
}

func TestStoreDownRefusesInsteadOfForgetting(t *testing.T) {
	t.Parallel()
	r := testkit.StartRedis(t)
	store := openRedisStore(t, r)
	rs := twoTokenReplicas(t, store)
	_, id := sendAs(t, rs.ts[0], http.MethodPost, "alice-token", "", initializeBody)
	if id == "" {
		t.Fatal("no session")
	}
	r.Kill()
	tests := []struct {
		name    string
		replica int
		session string
		body    string
	}{
		{"a request on the replica that opened the session", 0, id, pingBody},
		{"a request on a replica that never saw it", 1, id, pingBody},
		{"an initialize", 1, "", initializeBody},
	}
	for _, tt := range tests {
		code, issued := sendAs(t, rs.ts[tt.replica], http.MethodPost, "alice-token", tt.session, tt.body)
		if code != http.StatusServiceUnavailable || issued != "" {
			t.Errorf("%s with redis down: status %d, session %q; want 503 and none", tt.name, code, issued)
		}
	}
	r.Restart()
	if got, _ := sendAs(t, rs.ts[1], http.MethodPost, "alice-token", "", initializeBody); got != http.StatusOK {
		t.Errorf("initialize after redis is back: %d", got)
	}
}

func TestSessionIdleOnOneReplicaLivesWhileUsedOnAnother(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, store state.Store) {
		// Long enough that a ping every quarter of it keeps the session
		// alive on a loaded machine under -race (400 ms did not, once).
		const idle = time.Second
		rs := newReplicas(t, 2, store, rules.PolicySpec{Default: "allow"}, streamable.Options{Sessions: sessiontable.Limits{IdleTimeout: idle}}, nil)
		_, id := sendAs(t, rs.ts[0], http.MethodPost, "", "", initializeBody)
		// Used on replica 1 for three idle timeouts: replica 0's reaper
		// ends it there, but not everywhere.
		for end := time.Now().Add(3 * idle); time.Now().Before(end); time.Sleep(idle / 4) {
			if got, _ := sendAs(t, rs.ts[1], http.MethodPost, "", id, pingBody); got != http.StatusOK {
				t.Fatalf("ping on replica 1: %d", got)
			}
		}
		if got, _ := sendAs(t, rs.ts[0], http.MethodPost, "", id, pingBody); got != http.StatusOK {
			t.Errorf("ping on replica 0 after it was idle there but used on replica 1: %d, want 200", got)
		}
		// Idle everywhere: it ends everywhere.
		time.Sleep(idle + idle/2)
		for i, ts := range rs.ts {
			if got, _ := sendAs(t, ts, http.MethodPost, "", id, pingBody); got != http.StatusNotFound {
				t.Errorf("ping on replica %d after the session was idle everywhere: %d, want 404", i, got)
			}
		}
	})
}
