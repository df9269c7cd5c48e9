package upstream

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// starts returns the pids of the faulty stand-in's starts in dir, in order.
func starts(t *testing.T, dir string) []int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "starts"))
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, line := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(line)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	return pids
}

// withEnv returns spec with its Env copied and k=v added.
func withEnv(spec Spec, k, v string) Spec {
	spec.Env = maps.Clone(spec.Env)
	spec.Env[k] = v
	return spec
}

// cloneSpec returns spec with its maps and slices copied, as a config
// reload would build it.
func cloneSpec(spec Spec) Spec {
	spec.Env = maps.Clone(spec.Env)
	spec.Headers = maps.Clone(spec.Headers)
	spec.Args = slices.Clone(spec.Args)
	return spec
}

func echo(t *testing.T, pool *Pool, server, text string) {
	t.Helper()
	res, err := pool.Call(t.Context(), server, nil, mcp.CallToolParams{Name: "tool0", Arguments: map[string]any{"text": text}})
	if err != nil {
		t.Fatalf("call to %s: %v", server, err)
	}
	if got := firstText(t, res); got != text {
		t.Errorf("%s tool0 = %q, want %q", server, got, text)
	}
}

type reconciled struct{ Added, Removed, Restarted []string }

func TestReconcileAddsRemovesRestartsAndKeeps(t *testing.T) {
	t.Parallel()
	keep, keepDir := faulty(t, "")
	gone, goneDir := faulty(t, "")
	change, changeDir := faulty(t, "")
	streamable := httptest.NewServer(mcpserver.NewStreamableHTTPServer(newStandIn(5)))
	t.Cleanup(streamable.Close)
	pool, evs := startFaulty(t, map[string]Spec{"keep": keep, "gone": gone, "change": change})
	for range 3 {
		evs.wait(t, EventConnected, 5*time.Second)
	}
	keepPid, gonePid, oldChangePid := starts(t, keepDir)[0], starts(t, goneDir)[0], starts(t, changeDir)[0]
	goneGrandchild := readPid(t, filepath.Join(goneDir, "pid"))
	keepSession, _, err := pool.Session("keep")
	if err != nil {
		t.Fatal(err)
	}

	// A call in flight to the server about to be removed.
	inFlight := make(chan error, 1)
	go func() {
		_, err := pool.Call(context.Background(), "gone", nil, mcp.CallToolParams{Name: "hang"})
		inFlight <- err
	}()
	waitFor(t, func() bool { return len((*pool.servers.Load())["gone"].gate.slots) == 1 })
	time.Sleep(50 * time.Millisecond) // let the request reach the upstream

	added, removed, restarted := pool.Reconcile(t.Context(), map[string]Spec{
		"keep":   cloneSpec(keep),
		"change": withEnv(change, "EXTRA", "1"),
		"http":   {Transport: TransportHTTP, URL: streamable.URL + "/mcp"},
	})
	want := reconciled{Added: []string{"http"}, Removed: []string{"gone"}, Restarted: []string{"change"}}
	if diff := cmp.Diff(want, reconciled{added, removed, restarted}); diff != "" {
		t.Errorf("Reconcile (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"change", "http", "keep"}, pool.Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}

	t.Run("added", func(t *testing.T) {
		tools, err := pool.Tools("http")
		if err != nil || len(tools) != 5 {
			t.Fatalf("Tools = %d tools, %v; want 5", len(tools), err)
		}
		res, err := pool.Call(t.Context(), "http", nil, mcp.CallToolParams{Name: "tool3", Arguments: map[string]any{"text": "new"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := firstText(t, res); got != "new" {
			t.Errorf("tool3 = %q", got)
		}
	})
	t.Run("removed", func(t *testing.T) {
		select {
		case err := <-inFlight:
			if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), `upstream "gone" was stopped by a reload`) {
				t.Errorf("call in flight: err = %v, want ErrUnavailable saying the server was stopped by a reload", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the call in flight to the removed server did not end")
		}
		if _, err := pool.Call(t.Context(), "gone", nil, mcp.CallToolParams{Name: "tool0"}); !errors.Is(err, ErrUnknownServer) {
			t.Errorf("Call: err = %v, want ErrUnknownServer", err)
		}
		if _, err := pool.Tools("gone"); !errors.Is(err, ErrUnknownServer) {
			t.Errorf("Tools: err = %v, want ErrUnknownServer", err)
		}
		if err := pool.Err("gone"); !errors.Is(err, ErrUnknownServer) {
			t.Errorf("Err: err = %v, want ErrUnknownServer", err)
		}
		if _, _, err := pool.Session("gone"); !errors.Is(err, ErrUnknownServer) {
			t.Errorf("Session: err = %v, want ErrUnknownServer", err)
		}
		if alive(gonePid) {
			t.Errorf("the removed server (pid %d) is still running after Reconcile returned", gonePid)
		}
		waitGone(t, goneGrandchild, "grandchild of the removed server")
	})
	t.Run("restarted", func(t *testing.T) {
		pids := starts(t, changeDir)
		if len(pids) != 2 || pids[1] == oldChangePid {
			t.Fatalf("starts of the changed server = %v, want a second, new process", pids)
		}
		if alive(oldChangePid) {
			t.Errorf("the old process of the changed server (pid %d) is still running", oldChangePid)
		}
		echo(t, pool, "change", "restarted")
	})
	t.Run("unchanged", func(t *testing.T) {
		if diff := cmp.Diff([]int{keepPid}, starts(t, keepDir)); diff != "" {
			t.Errorf("starts of the unchanged server (-want +got):\n%s", diff)
		}
		sess, _, err := pool.Session("keep")
		if err != nil || sess != keepSession {
			t.Errorf("Session = %p, %v; want the same session %p", sess, err, keepSession)
		}
		echo(t, pool, "keep", "kept")
	})
	t.Run("events", func(t *testing.T) {
		var got []string
		for _, ev := range evs.snapshot()[3:] {
			got = append(got, ev.Server+" "+ev.Kind.String())
		}
		slices.Sort(got)
		want := []string{"change connected", "gone removed", "http connected"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("events after Reconcile (-want +got):\n%s", diff)
		}
	})

	// The same specs again: nothing happens.
	added, removed, restarted = pool.Reconcile(t.Context(), map[string]Spec{
		"keep":   cloneSpec(keep),
		"change": withEnv(change, "EXTRA", "1"),
		"http":   {Transport: TransportHTTP, URL: streamable.URL + "/mcp", Headers: map[string]string{}},
	})
	if diff := cmp.Diff(reconciled{}, reconciled{added, removed, restarted}); diff != "" {
		t.Errorf("second Reconcile with the same specs (-want +got):\n%s", diff)
	}
	if got := len(starts(t, changeDir)); got != 2 {
		t.Errorf("the changed server started %d times, want 2", got)
	}
}

func TestReconcileKeepsServerWithNewHeaderFunc(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	handler := mcpserver.NewStreamableHTTPServer(newStandIn(1))
	streamable := httptest.NewServer(httpHandlerFunc(func(r string) {
		mu.Lock()
		seen = append(seen, r)
		mu.Unlock()
	}, handler))
	t.Cleanup(streamable.Close)
	headers := func(v string) func(context.Context) map[string]string {
		return func(context.Context) map[string]string { return map[string]string{"X-Test": v} }
	}
	spec := Spec{Transport: TransportHTTP, URL: streamable.URL + "/mcp", HeaderFunc: headers("old")}
	pool := Start(t.Context(), map[string]Spec{"http": spec}, nil)
	t.Cleanup(func() { pool.Close() })
	before, _, err := pool.Session("http")
	if err != nil {
		t.Fatal(err)
	}

	spec.HeaderFunc = headers("new")
	added, removed, restarted := pool.Reconcile(t.Context(), map[string]Spec{"http": spec})
	if diff := cmp.Diff(reconciled{}, reconciled{added, removed, restarted}); diff != "" {
		t.Errorf("Reconcile with only a new HeaderFunc (-want +got):\n%s", diff)
	}
	after, _, err := pool.Session("http")
	if err != nil || after != before {
		t.Errorf("Session = %p, %v; want the same session %p", after, err, before)
	}
	mu.Lock()
	seen = nil
	mu.Unlock()
	echo(t, pool, "http", "x")
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(seen, "new") || slices.Contains(seen, "old") {
		t.Errorf("X-Test headers after Reconcile = %q, want the new HeaderFunc's", seen)
	}

	spec.HeaderFunc = nil
	if _, _, restarted := pool.Reconcile(t.Context(), map[string]Spec{"http": spec}); !slices.Equal(restarted, []string{"http"}) {
		t.Errorf("Reconcile dropping HeaderFunc restarted %v, want [http]", restarted)
	}
}

func TestReconcileRemovedThenReaddedServerStartsAfterTheOldStopped(t *testing.T) {
	t.Parallel()
	spec, dir := faulty(t, "")
	pool, evs := startFaulty(t, map[string]Spec{"fs": spec})
	evs.wait(t, EventConnected, 5*time.Second)
	if _, removed, _ := pool.Reconcile(t.Context(), map[string]Spec{}); !slices.Equal(removed, []string{"fs"}) {
		t.Fatalf("removed = %v", removed)
	}
	if added, _, _ := pool.Reconcile(t.Context(), map[string]Spec{"fs": spec}); !slices.Equal(added, []string{"fs"}) {
		t.Fatalf("added = %v", added)
	}
	evs.wait(t, EventRemoved, 5*time.Second)
	evs.wait(t, EventConnected, 5*time.Second)
	if pids := starts(t, dir); len(pids) != 2 {
		t.Errorf("starts = %v, want 2", pids)
	}
	echo(t, pool, "fs", "again")
}

func TestCloseStopsServersAddedByReconcile(t *testing.T) {
	t.Parallel()
	pool := Start(t.Context(), nil, nil)
	spec, dir := faulty(t, "")
	if added, _, _ := pool.Reconcile(t.Context(), map[string]Spec{"fs": spec}); !slices.Equal(added, []string{"fs"}) {
		t.Fatalf("added = %v", added)
	}
	echo(t, pool, "fs", "added")
	grandchild := readPid(t, filepath.Join(dir, "pid"))
	if err := pool.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, grandchild, "grandchild of the added server")
	if _, err := pool.Call(t.Context(), "fs", nil, mcp.CallToolParams{Name: "tool0"}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("call after Close: %v", err)
	}

	late, lateDir := faulty(t, "")
	added, removed, restarted := pool.Reconcile(t.Context(), map[string]Spec{"late": late})
	if diff := cmp.Diff(reconciled{}, reconciled{added, removed, restarted}); diff != "" {
		t.Errorf("Reconcile after Close (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(lateDir, "starts")); err == nil {
		t.Error("Reconcile after Close started a server")
	}
	if diff := cmp.Diff([]string{"fs"}, pool.Names()); diff != "" {
		t.Errorf("Names after Close (-want +got):\n%s", diff)
	}
}

// TestConcurrentReconcileAndCalls is for the race detector: calls, lookups
// and Closes race with Reconciles adding and removing servers.
func TestConcurrentReconcileAndCalls(t *testing.T) {
	t.Parallel()
	streamable := httptest.NewServer(mcpserver.NewStreamableHTTPServer(newStandIn(1)))
	t.Cleanup(streamable.Close)
	a := Spec{Transport: TransportHTTP, URL: streamable.URL + "/mcp"}
	b := a
	b.CallTimeout = time.Minute
	pool := Start(t.Context(), map[string]Spec{"a": a}, nil)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, name := range []string{"a", "b"} {
					_, err := pool.Call(context.Background(), name, nil, mcp.CallToolParams{Name: "tool0"})
					if err != nil && !errors.Is(err, ErrUnknownServer) && !errors.Is(err, ErrUnavailable) {
						t.Errorf("call to %s: %v", name, err)
					}
					_, _ = pool.Tools(name)
					_ = pool.Err(name)
					_ = pool.Names()
				}
			}
		})
	}
	specs := []map[string]Spec{{"a": a}, {"a": b, "b": a}, {"b": b}, {}}
	for i := range 20 {
		wg.Go(func() { pool.Reconcile(t.Context(), specs[i%len(specs)]) })
		if i%2 == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	time.Sleep(100 * time.Millisecond)
	close(stop)
	if err := pool.Close(); err != nil {
		t.Error(err)
	}
	wg.Wait()
}

// snapshot returns the events so far.
func (e *events) snapshot() []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.got)
}

// httpHandlerFunc passes each request's X-Test header to seen, then serves
// it with h.
func httpHandlerFunc(seen func(string), h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get("X-Test"); v != "" {
			seen(v)
		}
		h.ServeHTTP(w, r)
	})
}
