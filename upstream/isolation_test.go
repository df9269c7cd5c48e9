package upstream

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// isolatedPool starts a pool of one stdio stand-in, "iso", isolated as
// spec says, with env ("NAME=value") added to its own, and counts the
// events reported for it.
func isolatedPool(t *testing.T, spec Spec, env ...string) (*Pool, *atomic.Int32) {
	t.Helper()
	spec.Transport, spec.Command = TransportStdio, os.Args[0]
	spec.Env = map[string]string{stdioServerEnv: filepath.Join(t.TempDir(), "pid")}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		spec.Env[k] = v
	}
	var events atomic.Int32
	pool := Start(t.Context(), map[string]Spec{"iso": spec}, &Options{OnEvent: func(Event) { events.Add(1) }})
	t.Cleanup(func() { pool.Close() })
	if err := pool.Err("iso"); err != nil {
		t.Fatal(err)
	}
	return pool, &events
}

// callAs calls tool0 on "iso" as r and returns the instance that served it.
func callAs(t *testing.T, pool *Pool, r Route) (string, error) {
	t.Helper()
	raw, err := pool.Call(t.Context(), "iso", &r, mcp.CallToolParams{Name: "tool0", Arguments: map[string]any{"text": "hi"}})
	if err == nil && firstText(t, raw) != "hi" {
		t.Errorf("tool0 answered %q", firstText(t, raw))
	}
	return r.Instance, err
}

// pidOf is the process id an instance name ends with.
func pidOf(t *testing.T, instance string) int {
	t.Helper()
	_, after, ok := strings.Cut(instance, " pid ")
	pid, err := strconv.Atoi(after)
	if !ok || err != nil {
		t.Fatalf("instance %q names no pid", instance)
	}
	return pid
}

func TestEachPrincipalIsServedByAChildOfItsOwn(t *testing.T) {
	t.Parallel()
	pool, events := isolatedPool(t, Spec{Isolation: IsolationPerPrincipal})
	before := events.Load()
	alice, err := callAs(t, pool, Route{Principal: "alice", Session: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	bob, err := callAs(t, pool, Route{Principal: "bob", Session: "s2"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := callAs(t, pool, Route{Principal: "alice", Session: "s3"})
	if err != nil {
		t.Fatal(err)
	}
	if pidOf(t, alice) == pidOf(t, bob) {
		t.Errorf("alice (%q) and bob (%q) share a process", alice, bob)
	}
	if again != alice {
		t.Errorf("alice's second call was served by %q, her first by %q", again, alice)
	}
	if !strings.HasPrefix(alice, "principal:alice#") {
		t.Errorf("alice's instance is %q", alice)
	}
	if n := events.Load() - before; n != 0 {
		t.Errorf("starting the children reported %d events; only the template's are reported", n)
	}
}

func TestACallWithoutARouteIsNotServedByTheSharedTemplate(t *testing.T) {
	t.Parallel()
	pool, _ := isolatedPool(t, Spec{Isolation: IsolationPerPrincipal})
	_, err := pool.Call(t.Context(), "iso", nil, mcp.CallToolParams{Name: "tool0", Arguments: map[string]any{"text": "hi"}})
	if err == nil || !strings.Contains(err.Error(), "names no caller") {
		t.Fatalf("a call without a route: %v; want it refused, not served by the process every caller shares", err)
	}
	_, err = pool.Request(t.Context(), "iso", nil, func(context.Context, *client.Client, mcp.ServerCapabilities) (any, error) { return nil, nil })
	if err == nil {
		t.Fatal("a request without a route was served; want it refused")
	}
	s, _ := pool.server("iso")
	s.kids.mu.Lock()
	defer s.kids.mu.Unlock()
	if len(s.kids.byKey) != 0 {
		t.Errorf("a call without a route started %d children", len(s.kids.byKey))
	}
}

func TestASessionIDSentByAnotherPrincipalDoesNotReachTheSessionsChild(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		isolation Isolation
		a, b      Route
		same      bool
	}{
		{"one session id, two principals", IsolationPerSession, Route{Principal: "alice", Session: "s"}, Route{Principal: "mallory", Session: "s"}, false},
		{"two sessions of one principal", IsolationPerSession, Route{Principal: "alice", Session: "s1"}, Route{Principal: "alice", Session: "s2"}, false},
		{"no sessions, two principals", IsolationPerSession, Route{Principal: "alice"}, Route{Principal: "mallory"}, false},
		{"no sessions, one principal", IsolationPerSession, Route{Principal: "alice"}, Route{Principal: "alice"}, true},
		{"per principal, two sessions", IsolationPerPrincipal, Route{Principal: "alice", Session: "s1"}, Route{Principal: "alice", Session: "s2"}, true},
		{"per principal, one session id, two principals", IsolationPerPrincipal, Route{Principal: "alice", Session: "s"}, Route{Principal: "mallory", Session: "s"}, false},
		{"a principal named like another's session", IsolationPerSession, Route{Principal: "alice", Session: "s1"}, Route{Principal: "alice session:s1"}, false},
		{"a session id spelling out another's", IsolationPerSession, Route{Principal: "alice", Session: "s1 session:s2"}, Route{Principal: "alice session:s1", Session: "s2"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if same := tt.isolation.key(&tt.a) == tt.isolation.key(&tt.b); same != tt.same {
				t.Errorf("keys %q and %q: same = %v, want %v", tt.isolation.key(&tt.a), tt.isolation.key(&tt.b), same, tt.same)
			}
		})
	}
}

func TestOneChildTooManyFailsNamingIsolationMax(t *testing.T) {
	t.Parallel()
	pool, _ := isolatedPool(t, Spec{Isolation: IsolationPerPrincipal, IsolationMax: 1})
	alice, err := callAs(t, pool, Route{Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = callAs(t, pool, Route{Principal: "bob"})
	if !errors.Is(err, ErrIsolationFull) || !strings.Contains(err.Error(), "isolation_max") {
		t.Fatalf("bob's call beyond the cap: %v, want ErrIsolationFull naming isolation_max", err)
	}
	if again, err := callAs(t, pool, Route{Principal: "alice"}); err != nil || again != alice {
		t.Errorf("alice after the refusal: %q, %v; want %q", again, err, alice)
	}
}

func TestAnIdleChildIsStoppedAndABusyOneIsNot(t *testing.T) {
	t.Parallel()
	pool, _ := isolatedPool(t, Spec{Isolation: IsolationPerPrincipal, IsolationIdleTimeout: 100 * time.Millisecond})
	first, err := callAs(t, pool, Route{Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	pid := pidOf(t, first)
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("alice's child %q still runs %s after its last call", first, 10*time.Second)
		}
		time.Sleep(20 * time.Millisecond)
	}
	second, err := callAs(t, pool, Route{Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if second == first || !strings.HasPrefix(second, "principal:alice#2 ") {
		t.Errorf("after reaping alice was served by %q, want a second child (the first was %q)", second, first)
	}

	// A child with a call in flight is not idle, however long ago the
	// last one ended.
	s, _ := pool.server("iso")
	k := s.kids
	k.mu.Lock()
	c := k.byKey[childKey{principal: "alice"}]
	c.busy++
	c.lastUsed = time.Now().Add(-time.Hour)
	k.mu.Unlock()
	if got := k.idle(time.Now(), time.Millisecond); len(got) != 0 {
		t.Errorf("idle took %d children with a call in flight", len(got))
	}
	k.mu.Lock()
	c.busy--
	k.mu.Unlock()
}

func TestCloseStopsTheIsolatedChildren(t *testing.T) {
	t.Parallel()
	pool, _ := isolatedPool(t, Spec{Isolation: IsolationPerSession})
	var pids []int
	for _, r := range []Route{{Principal: "alice", Session: "a"}, {Principal: "bob", Session: "b"}} {
		instance, err := callAs(t, pool, r)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pidOf(t, instance))
	}
	if err := pool.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("child %d outlived Close", pid)
		}
	}
	if _, err := callAs(t, pool, Route{Principal: "carol"}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("a call after Close: %v, want ErrUnavailable", err)
	}
}

func TestReconcileRemovingAnIsolatedServerStopsItsChildren(t *testing.T) {
	t.Parallel()
	pool, _ := isolatedPool(t, Spec{Isolation: IsolationPerPrincipal})
	instance, err := callAs(t, pool, Route{Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	pool.Reconcile(ctx, map[string]Spec{})
	pid := pidOf(t, instance)
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("alice's child %d outlived its server's removal", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestARemoteServerIsNeverIsolated(t *testing.T) {
	t.Parallel()
	for _, tr := range []Transport{TransportHTTP, TransportSSE} {
		if (Spec{Transport: tr, Isolation: IsolationPerPrincipal}).isolated() {
			t.Errorf("a %s server is isolated", tr)
		}
	}
}

// TestReloadDrainsACallInFlightOnAnIsolatedChild changes an isolated
// server's Spec while a call is held on a child: the template has no call
// of its own, yet the child is not stopped under the call.
func TestReloadDrainsACallInFlightOnAnIsolatedChild(t *testing.T) {
	t.Parallel()
	spec, dir := faulty(t, "")
	spec.Isolation = IsolationPerPrincipal
	pool, evs := startFaulty(t, map[string]Spec{"s": spec})
	evs.wait(t, EventConnected, 10*time.Second)
	errs := make(chan error, 1)
	go func() {
		_, err := pool.Call(t.Context(), "s", &Route{Principal: "alice"}, mcp.CallToolParams{Name: "held"})
		errs <- err
	}()
	waitFor(t, func() bool { s, _ := pool.server("s"); return s.kids.busy() })
	if _, _, restarted := pool.Reconcile(t.Context(), map[string]Spec{"s": withEnv(spec, "EXTRA", "1")}); len(restarted) != 1 {
		t.Fatalf("restarted %v", restarted)
	}
	select {
	case err := <-errs:
		t.Fatalf("the held call ended before its release: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	appendFile(filepath.Join(dir, "release"), "")
	if err := <-errs; err != nil {
		t.Errorf("a call in flight on a child across the reload: %v", err)
	}
}
