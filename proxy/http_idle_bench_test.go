package proxy

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/proxy/httpguard"
	"github.com/mcpwarden/mcpwarden/proxy/sessiontable"
	"github.com/mcpwarden/mcpwarden/proxy/streamable"
)

// idleSessions is the number of open idle sessions issue #21 prices: 1,000
// of them should cost under 60 MB more.
const idleSessions = 1000

// BenchmarkIdleSessions measures what 1,000 open idle HTTP sessions cost:
// each is initialized and has listed tools; with a stream, each also holds
// the GET event stream a streamable-HTTP client keeps open for server
// notifications. It reports the heap and goroutine stacks they add, per
// session and for all 1,000. Client and server run in one process, so the
// figure holds the client's side of each stream too: it is an upper
// bound; the bare-stream case, an HTTP server that only holds each GET
// open, is the share of it that any Go HTTP server and client pay. Run it
// with
// go test ./proxy -run '^$' -bench IdleSessions -benchtime 1x.
func BenchmarkIdleSessions(b *testing.B) {
	bare := func(b *testing.B) (string, func() string) {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}))
		b.Cleanup(ts.Close)
		return ts.URL, func() string { return "s" }
	}
	proxied := func(b *testing.B) (string, func() string) {
		_, _, ts := reapedServer(b, sessiontable.Limits{IdleTimeout: time.Hour, Max: 2 * idleSessions, MaxPerPrincipal: 2 * idleSessions}, httpguard.Identity{})
		return ts.URL, func() string {
			id, err := abandon(b.Context(), ts, "")
			if err != nil {
				b.Fatal(err)
			}
			return id
		}
	}
	for _, tc := range []struct {
		name   string
		start  func(b *testing.B) (url string, open func() string)
		stream bool
	}{
		{"a bare held stream", bare, true},
		{"initialized", proxied, false},
		{"with a GET stream", proxied, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				url, session := tc.start(b)
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
				b.Cleanup(client.CloseIdleConnections)
				before := memInUse()
				var open []*http.Response
				for range idleSessions {
					id := session()
					if tc.stream {
						resp, err := openStream(b, client, url, id)
						if err != nil {
							b.Fatal(err)
						}
						open = append(open, resp)
					}
				}
				held := memInUse() - before
				for _, r := range open {
					_ = r.Body.Close()
				}
				b.ReportMetric(float64(held)/idleSessions/1024, "KiB/session")
				b.ReportMetric(float64(held)/(1<<20), "MiB/1000-sessions")
			}
		})
	}
}

// openStream opens the GET event stream of session id and returns the
// response, whose body the caller closes.
func openStream(b *testing.B, client *http.Client, url, id string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(b.Context(), http.MethodGet, url+streamable.EndpointPath, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(server.HeaderKeySessionID, id)
	req.Header.Set(mcp.HeaderProtocolVersion, "2025-11-25")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		b.Fatalf("GET stream: status %d", resp.StatusCode)
	}
	return resp, nil
}

// memInUse is the heap in use and the goroutine stacks, after collecting.
func memInUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc + m.StackInuse)
}
