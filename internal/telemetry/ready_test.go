package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/state"
)

// get fetches path from the Telemetry serving at addr.
func get(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestReadinessFollowsUpstreamsAndState(t *testing.T) {
	t.Parallel()
	var stateDown atomic.Bool
	var cfg Config
	cfg.Metrics.Listen = "127.0.0.1:0"
	tel := newTestTelemetry(t, Options{Config: cfg, Checks: []Check{{Name: "state", Run: func(context.Context) error {
		if stateDown.Load() {
			return fmt.Errorf("checking (redis at 127.0.0.1:1): %w: connection\nrefused", state.ErrUnavailable)
		}
		return nil
	}}}})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- tel.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	addr := tel.Addr().String()

	steps := []struct {
		name      string
		change    func()
		wantCode  int
		wantLines []string
	}{
		{"no upstream up yet is not ready", func() {}, 503, []string{"[-]upstream fs: not up", "[-]upstream github: not up", "[+]state ok", "not ready"}},
		{"one of two upstreams up is not ready", func() { tel.UpstreamUp("fs", true) }, 503, []string{"[+]upstream fs ok", "[-]upstream github: not up"}},
		{"every upstream up and the state reachable is ready", func() { tel.UpstreamUp("github", true) }, 200, []string{"[+]upstream fs ok", "[+]upstream github ok", "[+]state ok", "ready"}},
		{"the state unreachable is not ready", func() { stateDown.Store(true) }, 503, []string{"[-]state: checking (redis at 127.0.0.1:1): shared state unavailable: connection refused"}},
		{"the state back is ready", func() { stateDown.Store(false) }, 200, []string{"ready"}},
		{"an upstream lost after it was up is listed and still ready", func() { tel.UpstreamUp("github", false) }, 200, []string{"[!]upstream github: lost, being restarted (still ready)", "ready"}},
		{"a server not configured changes nothing", func() { tel.UpstreamUp("github", true); tel.UpstreamUp("other", false) }, 200, []string{"ready"}},
	}
	for _, s := range steps {
		s.change()
		code, body := get(t, addr, ReadyPath)
		if code != s.wantCode {
			t.Errorf("%s: GET %s = %d, want %d\n%s", s.name, ReadyPath, code, s.wantCode, body)
		}
		lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
		for _, w := range s.wantLines {
			found := false
			for _, l := range lines {
				found = found || l == w
			}
			if !found {
				t.Errorf("%s: %s answered\n%s\nwant a line %q", s.name, ReadyPath, body, w)
			}
		}
	}
	if code, body := get(t, addr, LivePath); code != 200 || body != "ok\n" {
		t.Errorf("GET %s = %d %q, want 200 ok", LivePath, code, body)
	}
}

func TestReadinessCheckIsBounded(t *testing.T) {
	t.Parallel()
	tel := newTestTelemetry(t, Options{Servers: []string{}, Checks: []Check{{Name: "state", Run: func(ctx context.Context) error {
		<-ctx.Done() // a state that never answers
		return fmt.Errorf("checking: %w", state.ErrUnavailable)
	}}}})
	start := time.Now()
	rec := &recorder{header: http.Header{}}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, ReadyPath, nil)
	tel.readyHandler().ServeHTTP(rec, req)
	if rec.code != http.StatusServiceUnavailable {
		t.Errorf("a hung state check answered %d, want 503", rec.code)
	}
	if d := time.Since(start); d > ReadyTimeout+time.Second {
		t.Errorf("the probe took %s, want at most about %s", d, ReadyTimeout)
	}
}

func TestNilTelemetryIsReady(t *testing.T) {
	t.Parallel()
	var tel *Telemetry
	if _, ok := tel.Ready(t.Context()); !ok {
		t.Error("a nil Telemetry is not ready")
	}
}

// recorder is a minimal http.ResponseWriter.
type recorder struct {
	header http.Header
	code   int
	body   strings.Builder
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = 200
	}
	return r.body.Write(b)
}
func (r *recorder) WriteHeader(code int) { r.code = code }

func TestStateMetricsCountOperationsFailuresAndResubscriptions(t *testing.T) {
	t.Parallel()
	sm := NewStateMetrics()
	tel := newTestTelemetry(t, Options{State: sm})
	sm.Observe(state.OpFindGrants, 3*time.Millisecond, nil)
	sm.Observe(state.OpFindGrants, time.Millisecond, fmt.Errorf("finding grants: %w", state.ErrUnavailable))
	sm.Observe(state.OpConsumeToken, time.Millisecond, fmt.Errorf("consuming: %w", state.ErrNotFound))
	sm.Observe(state.OpLoadSession, time.Millisecond, fmt.Errorf("decoding: %w", errors.New("bad json")))
	sm.Resubscribed()
	got := scrape(t, tel.Handler())
	tests := []struct {
		series string
		want   float64
	}{
		{`mcpwarden_state_operations_total{op="find_grants"}`, 2},
		{`mcpwarden_state_errors_total{error="unavailable",op="find_grants"}`, 1},
		{`mcpwarden_state_operations_total{op="consume_token"}`, 1},
		{`mcpwarden_state_errors_total{error="unavailable",op="consume_token"}`, 0},
		{`mcpwarden_state_errors_total{error="other",op="load_session"}`, 1},
		{`mcpwarden_state_operation_duration_seconds_count{op="find_grants"}`, 2},
		{`mcpwarden_state_operation_duration_seconds_bucket{op="find_grants",le="0.0025"}`, 1},
		{`mcpwarden_state_operations_total{op="put_grant"}`, 0},
		{`mcpwarden_state_resubscriptions_total`, 1},
	}
	for _, tt := range tests {
		if v, ok := got[tt.series]; !ok || v != tt.want {
			t.Errorf("%s = %v (present %v), want %v", tt.series, v, ok, tt.want)
		}
	}
	var nilMetrics *StateMetrics
	nilMetrics.Observe(state.OpFindGrants, 0, nil) // does nothing, does not panic
	nilMetrics.Resubscribed()
}
