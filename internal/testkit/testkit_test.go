package testkit

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// fatalRecorder is a testing.TB whose Fatalf notes the message and ends
// the goroutine, as the real one does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// eventually runs Eventually on its own goroutine, as a failing one ends
// it, and returns the failure message ("" if it passed).
func eventually(t *testing.T, within time.Duration, cond func() bool) string {
	f := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Eventually(f, within, "the thing", cond)
	}()
	<-done
	return f.msg
}

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var checks int
		start := time.Now()
		msg := eventually(t, 5*time.Second, func() bool { checks++; return time.Since(start) >= time.Second })
		if msg != "" {
			t.Fatalf("Eventually failed: %s", msg)
		}
		if waited := time.Since(start); waited > time.Second+250*time.Millisecond {
			t.Errorf("Eventually waited %s for a condition true after 1s", waited)
		}
		if checks > 20 {
			t.Errorf("Eventually checked %d times in 1s, want the pause to grow", checks)
		}
	})
}

func TestEventuallyFailsNamingWhatItWaitedFor(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		msg := eventually(t, 3*time.Second, func() bool { return false })
		if want := "timed out after 3s waiting for the thing"; msg != want {
			t.Errorf("failure = %q, want %q", msg, want)
		}
		if waited := time.Since(start); waited < 3*time.Second || waited > 4*time.Second {
			t.Errorf("Eventually gave up after %s, want about 3s", waited)
		}
	})
}

func TestEventuallyChecksAtOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if msg := eventually(t, time.Second, func() bool { return true }); msg != "" {
			t.Fatalf("Eventually failed: %s", msg)
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("Eventually waited %s for a condition already true", waited)
		}
	})
}

func TestLockedBufferTakesWritesFromManyGoroutines(t *testing.T) {
	t.Parallel()
	var b LockedBuffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("x"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := len(b.String()); got != 800 {
		t.Errorf("buffer holds %d bytes, want 800", got)
	}
}

func TestFreeAddrCanBeListenedOn(t *testing.T) {
	t.Parallel()
	addr := FreeAddr(t)
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Errorf("FreeAddr = %q, want a 127.0.0.1 address", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listening on the free address: %v", err)
	}
	ln.Close()
}

func TestOutsideHostAnswersHelloFromOutside(t *testing.T) {
	t.Parallel()
	port := OutsideHost(t)
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/anything", port))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(body), "hello from outside"; resp.StatusCode != http.StatusOK || got != want {
		t.Errorf("got %s %q, want 200 %q", resp.Status, got, want)
	}
}

func TestStandInRecordsCallsInOrder(t *testing.T) {
	t.Parallel()
	s := NewStandIn()
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), Echo)
	s.AddTool(mcp.NewTool("write", mcp.WithString("path")), Reply("written"))
	c := Connect(t, s.MCP(), "")
	if got := Text(CallTool(t, c, "echo", map[string]any{"text": "hi"})); got != "hi" {
		t.Errorf("echo = %q, want %q", got, "hi")
	}
	if got := Text(CallTool(t, c, "write", map[string]any{"path": "/a"})); got != "written" {
		t.Errorf("write = %q, want %q", got, "written")
	}
	want := []Call{{Tool: "echo", Arguments: `{"text":"hi"}`}, {Tool: "write", Arguments: `{"path":"/a"}`}}
	if diff := cmp.Diff(want, s.Calls()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{`{"text":"hi"}`, `{"path":"/a"}`}, s.Arguments()); diff != "" {
		t.Errorf("arguments (-want +got):\n%s", diff)
	}
}

func TestStandInServesStreamableHTTPThroughWrappers(t *testing.T) {
	t.Parallel()
	s := NewStandIn()
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), Echo)
	var seen atomic.Int32
	url := s.URL(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen.Add(1)
			h.ServeHTTP(w, r)
		})
	})
	c, err := client.NewStreamableHttpClient(url)
	if err != nil {
		t.Fatal(err)
	}
	Initialize(t, c, "")
	if got := Text(CallTool(t, c, "echo", map[string]any{"text": "over http"})); got != "over http" {
		t.Errorf("echo = %q", got)
	}
	if seen.Load() == 0 {
		t.Error("the wrapper saw no request")
	}
}

func TestTextJoinsTextContents(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		res  *mcp.CallToolResult
		want string
	}{
		{"a nil result has no text", nil, ""},
		{"a result without content has no text", &mcp.CallToolResult{}, ""},
		{"one text is itself", mcp.NewToolResultText("a"), "a"},
		{"texts are joined by newlines and images skipped", &mcp.CallToolResult{Content: []mcp.Content{
			mcp.NewTextContent("a"), mcp.NewImageContent("aGk=", "image/png"), mcp.NewTextContent("b"),
		}}, "a\nb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Text(tt.res); got != tt.want {
				t.Errorf("Text = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestScrapeReadsEverySample(t *testing.T) {
	t.Parallel()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("# HELP calls_total Calls.\n# TYPE calls_total counter\ncalls_total{server=\"up\",tool=\"echo\"} 3\n\nup 1\nlatency_seconds_sum 0.25\n"))
	})
	want := map[string]float64{`calls_total{server="up",tool="echo"}`: 3, "up": 1, "latency_seconds_sum": 0.25}
	if diff := cmp.Diff(want, Scrape(t, h, "/metrics")); diff != "" {
		t.Errorf("samples (-want +got):\n%s", diff)
	}
}

func TestHAProxyBalancesRoundRobin(t *testing.T) {
	t.Parallel()
	var backends []string
	for i := range 3 {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintf(w, "%d", i)
		}))
		t.Cleanup(srv.Close)
		backends = append(backends, strings.TrimPrefix(srv.URL, "http://"))
	}
	h := StartHAProxy(t, backends...)
	// One client with keep-alive: each request is balanced on its own.
	seen := map[string]int{}
	for range 9 {
		resp, err := http.Get(h.URL("/"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		seen[string(b)]++
	}
	if len(seen) != 3 || seen["0"] != 3 || seen["1"] != 3 || seen["2"] != 3 {
		t.Errorf("9 requests reached backends %v, want 3 each", seen)
	}
}
