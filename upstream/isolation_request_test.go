package upstream

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// requestAs runs a request on "iso" as r (a tools/list through Request)
// and returns the instance that served it and the client it was given.
func requestAs(t *testing.T, pool *Pool, r Route) (string, *client.Client, error) {
	t.Helper()
	var got *client.Client
	_, err := pool.Request(t.Context(), "iso", &r, func(ctx context.Context, cl *client.Client, _ mcp.ServerCapabilities) (any, error) {
		got = cl
		return cl.ListTools(ctx, mcp.ListToolsRequest{})
	})
	return r.Instance, got, err
}

func TestPerPrincipalRequestGoesToOwnChild(t *testing.T) {
	t.Parallel()
	pool, _ := isolatedPool(t, Spec{Isolation: IsolationPerPrincipal})
	template, _, err := pool.Session("iso")
	if err != nil {
		t.Fatal(err)
	}
	alice, aliceClient, err := requestAs(t, pool, Route{Principal: "alice", Session: "a"})
	if err != nil {
		t.Fatal(err)
	}
	bob, bobClient, err := requestAs(t, pool, Route{Principal: "bob", Session: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if aliceClient == template || bobClient == template || aliceClient == bobClient {
		t.Errorf("alice's request went to %p, bob's to %p, the template is %p: want a child each", aliceClient, bobClient, template)
	}
	if !strings.HasPrefix(alice, "principal:alice#") || pidOf(t, alice) == pidOf(t, bob) {
		t.Errorf("alice was served by %q, bob by %q", alice, bob)
	}
	called, err := callAs(t, pool, Route{Principal: "alice", Session: "a2"})
	if err != nil {
		t.Fatal(err)
	}
	if called != alice {
		t.Errorf("alice's tools/call was served by %q, her request by %q: want one child", called, alice)
	}
}

func TestPerSessionRequestDoesNotReachAnotherSessionsChild(t *testing.T) {
	t.Parallel()
	pool, _ := isolatedPool(t, Spec{Isolation: IsolationPerSession})
	first, _, err := requestAs(t, pool, Route{Principal: "alice", Session: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []Route{{Principal: "alice", Session: "s2"}, {Principal: "mallory", Session: "s1"}} {
		got, _, err := requestAs(t, pool, r)
		if err != nil {
			t.Fatal(err)
		}
		if got == first || pidOf(t, got) == pidOf(t, first) {
			t.Errorf("%+v was served by %q, the child of alice's session s1", r, got)
		}
	}
}

func TestARequestBeyondTheCapFailsNamingIsolationMax(t *testing.T) {
	t.Parallel()
	pool, _ := isolatedPool(t, Spec{Isolation: IsolationPerPrincipal, IsolationMax: 1})
	if _, _, err := requestAs(t, pool, Route{Principal: "alice"}); err != nil {
		t.Fatal(err)
	}
	_, _, err := requestAs(t, pool, Route{Principal: "bob"})
	if !errors.Is(err, ErrIsolationFull) || !strings.Contains(err.Error(), "isolation_max") {
		t.Errorf("bob's request beyond the cap: %v, want ErrIsolationFull naming isolation_max", err)
	}
}

func TestEndedSessionStopsItsPerSessionChild(t *testing.T) {
	t.Parallel()
	pool, _ := isolatedPool(t, Spec{Isolation: IsolationPerSession})
	ended, err := callAs(t, pool, Route{Principal: "alice", Session: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := callAs(t, pool, Route{Principal: "alice", Session: "s2"})
	if err != nil {
		t.Fatal(err)
	}
	pool.EndSession("s1")
	waitGone(t, pidOf(t, ended), "the child of ended session s1")
	if !alive(pidOf(t, other)) {
		t.Errorf("the child of session s2 (%q) was stopped with s1's", other)
	}
	again, err := callAs(t, pool, Route{Principal: "alice", Session: "s2"})
	if err != nil || again != other {
		t.Errorf("s2 after s1 ended: %q, %v; want %q", again, err, other)
	}
}

func TestEndSessionLeavesPerPrincipalChildrenToTheIdleTimeout(t *testing.T) {
	t.Parallel()
	pool, _ := isolatedPool(t, Spec{Isolation: IsolationPerPrincipal})
	instance, err := callAs(t, pool, Route{Principal: "alice", Session: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	pool.EndSession("s1")
	pool.EndSession("")
	again, err := callAs(t, pool, Route{Principal: "alice", Session: "s2"})
	if err != nil || again != instance {
		t.Errorf("alice after one of her sessions ended: %q, %v; want her child %q", again, err, instance)
	}
}

func TestAChildsPeerContextNamesOnlyTheCallerItServes(t *testing.T) {
	t.Parallel()
	pool, _ := isolatedPool(t, Spec{Isolation: IsolationPerSession})
	if _, err := callAs(t, pool, Route{Principal: "alice", Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	s, _ := pool.server("iso")
	inherited := context.WithValue(t.Context(), callerKey{}, &Route{Principal: "alice"})
	if r := CallerOf(s.peerContext(inherited)); r != nil {
		t.Errorf("the template's peer context carries %+v, want none: it serves no caller", r)
	}
	s.kids.mu.Lock()
	c := s.kids.byKey[childKey{principal: "alice", session: "s1"}]
	s.kids.mu.Unlock()
	r := CallerOf(c.s.peerContext(t.Context()))
	if r == nil || r.Principal != "alice" || r.Session != "s1" || r.Instance != c.s.instance {
		t.Fatalf("alice's child's peer context carries %+v", r)
	}
	r.Principal = "mallory" // a Peer changing it changes nothing
	if again := CallerOf(c.s.peerContext(t.Context())); again.Principal != "alice" {
		t.Errorf("a Peer rewrote the child's route to %+v", again)
	}
}

func TestRouteServesOnlyItsCallersSessions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name               string
		route              *Route
		principal, session string
		want               bool
	}{
		{"a shared server serves everyone", nil, "anyone", "x", true},
		{"a principal's child serves each of her sessions", &Route{Principal: "alice"}, "alice", "s9", true},
		{"a principal's child serves no other principal", &Route{Principal: "alice"}, "mallory", "s1", false},
		{"a session's child serves that session", &Route{Principal: "alice", Session: "s1"}, "alice", "s1", true},
		{"a session's child serves no other session of its principal", &Route{Principal: "alice", Session: "s1"}, "alice", "s2", false},
		{"a session's child serves no other principal on its session id", &Route{Principal: "alice", Session: "s1"}, "mallory", "s1", false},
		{"an empty principal is a principal", &Route{Principal: ""}, "alice", "s1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.route.Serves(tt.principal, tt.session); got != tt.want {
				t.Errorf("%+v.Serves(%q, %q) = %v, want %v", tt.route, tt.principal, tt.session, got, tt.want)
			}
		})
	}
}
