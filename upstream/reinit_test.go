package upstream

import (
	"net/http"
	"net/http/httptest"
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
}

func (f *forgetful) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("Mcp-Session-Id")
	f.mu.Lock()
	gone := f.forgotten[id]
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
		_, err := pool.Call(t.Context(), "http", mcp.CallToolParams{Name: "tool0", Arguments: map[string]any{"text": "x"}})
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
		if d := time.Since(begin); d > 2*time.Second {
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
