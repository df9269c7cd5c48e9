package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// collector stands in for an OTLP/HTTP collector: it counts the exports.
type collector struct {
	mu      sync.Mutex
	exports int
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.URL.Path == "/v1/traces" && len(body) > 0 {
		c.mu.Lock()
		c.exports++
		c.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
}

func (c *collector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exports
}

func get(url string) (int, string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// serve with metrics.listen and tracing.otlp_endpoint set serves /metrics
// while it runs, counts the calls it decides, passes the trace context to
// the upstream, flushes the spans at exit and releases the metrics port.
func TestServeWiresTelemetry(t *testing.T) {
	t.Parallel()
	var (
		mu           sync.Mutex
		traceparents []string
	)
	stream := mcpserver.NewStreamableHTTPServer(newStandIn())
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tp := r.Header.Get("traceparent"); tp != "" {
			mu.Lock()
			traceparents = append(traceparents, tp)
			mu.Unlock()
		}
		stream.ServeHTTP(w, r)
	}))
	defer up.Close()
	col := &collector{}
	otlp := httptest.NewServer(col)
	defer otlp.Close()

	dir := t.TempDir()
	listen, metrics := testkit.FreeAddr(t), testkit.FreeAddr(t)
	cfg := fmt.Sprintf(`listen: %q
servers:
  up: { url: %q }
policy:
  default: deny
  allow: ["mcp:up:echo"]
audit: { path: audit.jsonl }
metrics: { listen: %q }
tracing: { otlp_endpoint: %q }
`, listen, up.URL+"/mcp", metrics, otlp.URL)
	path := filepath.Join(dir, "mcpwarden.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stderr := &testkit.LockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, &globals{}, serveFlags{config: path}, strings.NewReader(""), io.Discard, stderr)
	}()
	defer func() {
		if t.Failed() {
			t.Logf("serve's log:\n%s", stderr)
		}
	}()

	metricsURL := "http://" + metrics + "/metrics"
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", listen, 100*time.Millisecond)
		if err == nil {
			conn.Close()
			break
		}
		select {
		case err := <-done:
			t.Fatalf("serve returned before serving: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not listen on %s", listen)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// A legacy (initialize) session, so that there is a session to count.
	tr, err := transport.NewStreamableHTTP("http://" + listen + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithLegacyProtocolOnly())
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION, ClientInfo: mcp.Implementation{Name: "unit", Version: "0"},
	}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"up__echo", "up__write_file"} {
		if _, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name}}); err != nil {
			t.Fatalf("calling %s: %v", name, err)
		}
	}

	code, body, err := get(metricsURL)
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET %s: %d, %v", metricsURL, code, err)
	}
	for _, want := range []string{
		`mcpwarden_decisions_total{decision="allow",profile="",server="up",tool="echo"} 1`,
		`mcpwarden_decisions_total{decision="deny",profile="",server="up",tool="write_file"} 1`,
		`mcpwarden_upstream_call_duration_seconds_count{outcome="ok",server="up"} 1`,
		`mcpwarden_upstream_up{server="up"} 1`,
		`mcpwarden_upstream_restarts_total{server="up"} 0`,
		`mcpwarden_sessions_active 1`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	mu.Lock()
	if len(traceparents) != 1 {
		t.Errorf("the upstream got traceparent headers %q, want one, with the call", traceparents)
	}
	mu.Unlock()

	c.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve = %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not return after cancel")
	}
	if col.count() == 0 {
		t.Error("no spans reached the collector by the time serve returned")
	}
	if _, _, err := get(metricsURL); err == nil {
		t.Errorf("%s still answers after serve returned", metricsURL)
	}
}

// A metrics port in use stops serve at startup, naming the key, rather
// than leaving the proxy running without its metrics.
func TestServeFailsOnAMetricsPortInUse(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	up := httptest.NewServer(mcpserver.NewStreamableHTTPServer(newStandIn()))
	defer up.Close()
	dir := t.TempDir()
	cfg := fmt.Sprintf("listen: %q\nservers:\n  up: { url: %q }\naudit: { path: audit.jsonl }\nmetrics: { listen: %q }\n",
		testkit.FreeAddr(t), up.URL+"/mcp", ln.Addr().String())
	path := filepath.Join(dir, "mcpwarden.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	err = serve(t.Context(), &globals{}, serveFlags{config: path}, strings.NewReader(""), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "metrics.listen") {
		t.Errorf("serve = %v, want an error naming metrics.listen", err)
	}
}
