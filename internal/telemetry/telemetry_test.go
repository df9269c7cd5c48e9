package telemetry

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/rules"
)

func TestNilTelemetryIsANoOp(t *testing.T) {
	t.Parallel()
	var tel *Telemetry
	ctx := t.Context()

	tel.SetKnownTools("fs", []string{"read_file"})
	tel.Decision("ci", "fs", "read_file", rules.Allow)
	tel.Call("fs", time.Second, OutcomeFailed)
	tel.UpstreamUp("fs", true)
	tel.UpstreamRestarted("fs")
	tel.SessionOpened()
	tel.SessionClosed()
	tel.AskStarted()
	tel.AskEnded()
	tel.AuditWriteFailed()

	rctx, req := tel.StartRequest(ctx, Request{Method: "tools/call", Tool: "fs__read_file"})
	dctx, dec := tel.StartDecision(rctx, "fs", "read_file")
	dec.End(rules.Verdict{Decision: rules.Deny, Rule: "default"}, audit.GrantedByRule)
	uctx, up := tel.StartUpstreamCall(rctx, "fs", "read_file")
	up.End(errors.New("boom"))
	req.End(ErrToolResult)
	if rctx != ctx || dctx != ctx || uctx != ctx {
		t.Error("a nil Telemetry changed the context")
	}
	if h := tel.Headers(ctx); h != nil {
		t.Errorf("Headers = %v, want nil", h)
	}
	meta := &mcp.Meta{AdditionalFields: map[string]any{"traceparent": "x"}}
	if got := tel.InjectMeta(ctx, meta); got != meta {
		t.Errorf("InjectMeta = %v, want the meta unchanged", got)
	}
	if got := tel.ExtractMeta(ctx, meta); got != ctx {
		t.Error("ExtractMeta changed the context")
	}
	r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/mcp", nil)
	if got := tel.HTTPContext(ctx, r); got != ctx {
		t.Error("HTTPContext changed the context")
	}
	if a := tel.Addr(); a != nil {
		t.Errorf("Addr = %v, want nil", a)
	}
	if err := tel.Serve(ctx); err != nil {
		t.Errorf("Serve = %v", err)
	}
	if err := tel.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown = %v", err)
	}
	rec := httptest.NewRecorder()
	tel.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, MetricsPath, nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("Handler status = %d, want 404", rec.Code)
	}
	// The zero spans are no-ops too.
	Span{}.End(errors.New("x"))
	DecisionSpan{}.End(rules.Verdict{}, audit.GrantedByNone)
}

func TestServeServesMetricsUntilCancelled(t *testing.T) {
	t.Parallel()
	var cfg Config
	cfg.Metrics.Listen = "127.0.0.1:0"
	tel := newTestTelemetry(t, Options{Config: cfg})
	addr := tel.Addr()
	if addr == nil {
		t.Fatal("Addr = nil with metrics.listen set")
	}
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- tel.Serve(ctx) }()

	tel.AuditWriteFailed()
	resp, err := http.Get("http://" + addr.String() + MetricsPath)
	if err != nil {
		cancel()
		t.Fatalf("GET %s: %v", MetricsPath, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "mcpwarden_audit_write_failures_total 1") {
		t.Errorf("GET %s: %d\n%s", MetricsPath, resp.StatusCode, body)
	}
	if !strings.Contains(string(body), "go_goroutines") {
		t.Error("the Go runtime metrics are missing")
	}
	if resp, err := http.Get("http://" + addr.String() + "/other"); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET /other: %d, want 404", resp.StatusCode)
		}
	}
	if err := tel.Serve(ctx); err == nil {
		t.Error("a second Serve did not fail")
	}

	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("Serve = %v, want nil after cancel", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
}

func TestNewFailsOnAMetricsPortInUse(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var cfg Config
	cfg.Metrics.Listen = ln.Addr().String()
	_, err = New(Options{Config: cfg})
	if err == nil || !strings.HasPrefix(err.Error(), "metrics.listen: ") {
		t.Errorf("New = %v, want an error naming metrics.listen", err)
	}
}

func TestShutdownWithoutServeClosesTheListener(t *testing.T) {
	t.Parallel()
	var cfg Config
	cfg.Metrics.Listen = "127.0.0.1:0"
	tel, err := New(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	addr := tel.Addr().String()
	if err := tel.Shutdown(t.Context()); err != nil {
		t.Fatalf("Shutdown = %v", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the port is still held after Shutdown: %v", err)
	}
	ln.Close()
	if err := tel.Serve(t.Context()); err != nil {
		t.Errorf("Serve after Shutdown = %v, want nil", err)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  func(c *Config)
		want string // a substring of the error; "" for valid
	}{
		{"the zero config is valid and off", func(*Config) {}, ""},
		{"a loopback metrics listener is valid", func(c *Config) { c.Metrics.Listen = "127.0.0.1:9464" }, ""},
		{"an explicit all-interfaces listener is valid", func(c *Config) { c.Metrics.Listen = "0.0.0.0:9464" }, ""},
		{"a listener without a host is refused", func(c *Config) { c.Metrics.Listen = ":9464" }, "metrics.listen: \":9464\" has no host"},
		{"a listener that is not host:port is refused", func(c *Config) { c.Metrics.Listen = "9464" }, "metrics.listen: "},
		{"a listener without a port is refused", func(c *Config) { c.Metrics.Listen = "127.0.0.1:" }, "has no port"},
		{"an http endpoint on loopback is valid", func(c *Config) { c.Tracing.OTLPEndpoint = "http://127.0.0.1:4318" }, ""},
		{"an https endpoint is valid", func(c *Config) { c.Tracing.OTLPEndpoint = "https://otel.example:4318/v1/traces" }, ""},
		{"plain http to a remote collector needs insecure", func(c *Config) { c.Tracing.OTLPEndpoint = "http://otel-collector:4318" }, "tracing.insecure"},
		{"plain http to a remote collector with insecure is valid", func(c *Config) {
			c.Tracing.OTLPEndpoint = "http://otel-collector:4318"
			c.Tracing.Insecure = true
		}, ""},
		{"an endpoint without a scheme is refused", func(c *Config) { c.Tracing.OTLPEndpoint = "127.0.0.1:4318" }, "tracing.otlp_endpoint: "},
		{"a grpc endpoint is refused", func(c *Config) { c.Tracing.OTLPEndpoint = "grpc://127.0.0.1:4317" }, "http:// or https://"},
		{"credentials in the endpoint are refused and not echoed", func(c *Config) { c.Tracing.OTLPEndpoint = "https://user:hunter2@otel.example" }, "use tracing.headers"},
		{"a sample ratio above 1 is refused", func(c *Config) { c.Tracing.SampleRatio = 1.5 }, "tracing.sample_ratio: 1.5"},
		{"a negative sample ratio is refused", func(c *Config) { c.Tracing.SampleRatio = -0.1 }, "tracing.sample_ratio"},
		{"a bad header name is refused", func(c *Config) { c.Tracing.Headers = map[string]string{"Bad Name": "x"} }, "tracing.headers: \"Bad Name\""},
		{"a header value with a line break is refused", func(c *Config) { c.Tracing.Headers = map[string]string{"X-Key": "a\r\nEvil: 1"} }, "tracing.headers.X-Key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var c Config
			tt.cfg(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate = %v, want an error containing %q", err, tt.want)
			case err != nil && strings.Contains(err.Error(), "hunter2"):
				t.Errorf("the error echoes the password: %v", err)
			}
		})
	}
}

func TestConfigEnabled(t *testing.T) {
	t.Parallel()
	var c Config
	if c.Enabled() {
		t.Error("the zero config is enabled")
	}
	c.Tracing.OTLPEndpoint = "http://127.0.0.1:4318"
	if !c.Enabled() {
		t.Error("a config with an endpoint is not enabled")
	}
}

func TestEndpointGetsTheDefaultPath(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces"},
		{"http://127.0.0.1:4318/", "http://127.0.0.1:4318/v1/traces"},
		{"https://otel.example/custom/traces", "https://otel.example/custom/traces"},
	}
	for _, tt := range tests {
		u, err := TracingConfig{OTLPEndpoint: tt.in}.endpoint()
		if err != nil {
			t.Errorf("endpoint(%q): %v", tt.in, err)
			continue
		}
		if got := u.String(); got != tt.want {
			t.Errorf("endpoint(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
