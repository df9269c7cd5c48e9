package upstream

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// A forgetful server is a streamable HTTP MCP server that can be made to
// forget every session it has handed out, as one does when it restarts or
// expires them: requests that carry a forgotten session get 404.
type forgetful struct {
	h         http.Handler
	mu        sync.Mutex
	seen      []string
	forgotten map[string]bool
	always    bool // forget every session at once
	fresh     int  // initialize requests
}

func (f *forgetful) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("Mcp-Session-Id")
	f.mu.Lock()
	gone := f.forgotten[id] || f.always && id != ""
	if id == "" && r.Method == http.MethodPost {
		// A request without a session is an initialize, or the
		// server/discover that comes before it.
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"method":"initialize"`)) {
			f.fresh++
		}
	}
	if id != "" && !slices.Contains(f.seen, id) {
		f.seen = append(f.seen, id)
	}
	f.mu.Unlock()
	if gone {
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	f.h.ServeHTTP(w, r)
}

// forget makes every session seen so far unknown.
func (f *forgetful) forget() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.forgotten == nil {
		f.forgotten = map[string]bool{}
	}
	for _, id := range f.seen {
		f.forgotten[id] = true
	}
}

func TestLostUpstreamSessionReinitialises(t *testing.T) {
	t.Parallel()
	srv := &forgetful{h: mcpserver.NewStreamableHTTPServer(newStandIn(2))}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	evs := newEvents()
	// A backoff far longer than the test: a restart after a loss would
	// fail the calls below fast.
	pool := Start(t.Context(), map[string]Spec{"http": {Transport: TransportHTTP, URL: ts.URL + "/mcp"}},
		&Options{OnEvent: evs.add, MinBackoff: time.Minute, MaxBackoff: time.Minute})
	t.Cleanup(func() { pool.Close() })
	call := func() error {
		_, err := pool.Call(t.Context(), "http", nil, mcp.CallToolParams{Name: "tool0", Arguments: map[string]any{"text": "x"}})
		return err
	}
	if err := call(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(minSessionLife) // a session that lived
	for round := range 2 {
		srv.forget()
		begin := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Go(func() { errs <- call() })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("round %d: a call after the upstream forgot its session failed: %v", round, err)
			}
		}
		if d := time.Since(begin); d > 5*time.Second {
			t.Errorf("round %d: the calls took %s", round, d)
		}
		t.Logf("round %d: 8 calls across the lost session took %s", round, time.Since(begin).Round(time.Millisecond))
		evs.wait(t, EventReinitialized, 5*time.Second)
		time.Sleep(minSessionLife)
	}
	if kinds := evs.kinds(); slices.Contains(kinds, EventLost) || slices.Contains(kinds, EventRestarted) {
		t.Errorf("events %v: a lost session was reported as a crash", kinds)
	}
}

// TestReloadDrainsCallsInFlightOnAChangedServer changes a server's Spec
// while calls are held in flight on it: a call made after the change is
// answered by the new process while they are still held, they then finish
// on the old one, and the old one is stopped once drained.
func TestReloadDrainsCallsInFlightOnAChangedServer(t *testing.T) {
	t.Parallel()
	spec, dir := faulty(t, "")
	pool, evs := startFaulty(t, map[string]Spec{"s": spec})
	evs.wait(t, EventConnected, 10*time.Second)
	oldPid := starts(t, dir)[0]
	const inFlight = 8
	errs := make(chan error, inFlight)
	for range inFlight {
		go func() {
			_, err := pool.Call(t.Context(), "s", nil, mcp.CallToolParams{Name: "held"})
			errs <- err
		}()
	}
	waitFor(t, func() bool { s, _ := pool.server("s"); return len(s.gate.slots) == inFlight })
	_, _, restarted := pool.Reconcile(t.Context(), map[string]Spec{"s": withEnv(spec, "EXTRA", "1")})
	if !slices.Equal(restarted, []string{"s"}) {
		t.Fatalf("restarted %v", restarted)
	}
	raw, err := pool.Call(t.Context(), "s", nil, mcp.CallToolParams{Name: "tool0", Arguments: map[string]any{"text": "new"}})
	if err != nil {
		t.Fatalf("a call after the reload, while the old calls are held: %v", err)
	}
	if got := firstText(t, raw); got != "new" {
		t.Errorf("tool0 = %q", got)
	}
	select {
	case err := <-errs:
		t.Fatalf("a held call ended before its release: %v", err)
	default:
	}
	if pids := starts(t, dir); len(pids) != 2 || !alive(oldPid) {
		t.Fatalf("starts %v (old one alive: %v), want the old one draining and a new one", pids, alive(oldPid))
	}
	appendFile(filepath.Join(dir, "release"), "")
	for range inFlight {
		if err := <-errs; err != nil {
			t.Errorf("a call in flight across the reload: %v", err)
		}
	}
	waitGone(t, oldPid, "the drained old process")
}

// TestServerForgettingEverySessionIsNotReinitialisedInALoop makes a server
// forget each session as soon as it is made: the re-initialisation fails
// (its tools/list gets 404) and the server is retried with backoff, as a
// server that is down, not re-initialised again and again.
func TestServerForgettingEverySessionIsNotReinitialisedInALoop(t *testing.T) {
	t.Parallel()
	srv := &forgetful{h: mcpserver.NewStreamableHTTPServer(newStandIn(2))}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	pool := Start(t.Context(), map[string]Spec{"http": {Transport: TransportHTTP, URL: ts.URL + "/mcp"}},
		&Options{MinBackoff: time.Minute, MaxBackoff: time.Minute})
	t.Cleanup(func() { pool.Close() })
	time.Sleep(minSessionLife)
	srv.mu.Lock()
	srv.always = true
	srv.mu.Unlock()
	for range 5 {
		_, _ = pool.Call(t.Context(), "http", nil, mcp.CallToolParams{Name: "tool0"})
	}
	time.Sleep(500 * time.Millisecond)
	srv.mu.Lock()
	fresh := srv.fresh
	srv.mu.Unlock()
	if fresh > 2 {
		t.Errorf("%d initializations: the server was re-initialised in a loop", fresh)
	}
	if err := pool.Err("http"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Err = %v, want the server down, retried with backoff", err)
	}
}
