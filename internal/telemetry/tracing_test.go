package telemetry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/rules"
)

func newTracedTelemetry(t *testing.T) (*Telemetry, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	return newTestTelemetry(t, Options{SpanExporter: exp}), exp
}

// tracedCall goes through one call the way the proxy does.
func tracedCall(ctx context.Context, tel *Telemetry, upstreamErr error) (headers map[string]string, meta *mcp.Meta) {
	ctx, req := tel.StartRequest(ctx, Request{Method: "tools/call", Tool: "fs__read_file", Session: "s1"})
	_, dec := tel.StartDecision(ctx, "fs", "read_file")
	dec.End(rules.Verdict{Decision: rules.Allow, Rule: "mcp:fs:read_*", Gate: "policy", Reason: "secret path"}, audit.GrantedByRule)
	upCtx, up := tel.StartUpstreamCall(ctx, "fs", "read_file")
	headers = tel.Headers(upCtx)
	meta = tel.InjectMeta(upCtx, nil)
	up.End(upstreamErr)
	req.End(upstreamErr)
	return headers, meta
}

func spansByName(t *testing.T, exp *tracetest.InMemoryExporter) map[string]tracetest.SpanStub {
	t.Helper()
	out := map[string]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		out[s.Name] = s
	}
	return out
}

func attrs(s tracetest.SpanStub) map[attribute.Key]string {
	m := map[attribute.Key]string{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value.Emit()
	}
	return m
}

func TestSpansOfOneCallAreLinked(t *testing.T) {
	t.Parallel()
	tel, exp := newTracedTelemetry(t)
	tracedCall(t.Context(), tel, nil)

	spans := spansByName(t, exp)
	if len(spans) != 3 {
		t.Fatalf("got spans %v, want 3", exp.GetSpans().Snapshots())
	}
	req, dec, up := spans["tools/call fs__read_file"], spans[SpanDecide], spans["tools/call read_file"]
	if !req.SpanContext.IsValid() || !dec.SpanContext.IsValid() || !up.SpanContext.IsValid() {
		t.Fatalf("missing a span: %v", spans)
	}
	if req.Parent.IsValid() {
		t.Errorf("request span has parent %v, want a root", req.Parent.SpanID())
	}
	for name, child := range map[string]tracetest.SpanStub{"decision": dec, "upstream call": up} {
		if child.Parent.SpanID() != req.SpanContext.SpanID() {
			t.Errorf("%s span's parent = %v, want the request span %v", name, child.Parent.SpanID(), req.SpanContext.SpanID())
		}
		if child.SpanContext.TraceID() != req.SpanContext.TraceID() {
			t.Errorf("%s span is in trace %v, want %v", name, child.SpanContext.TraceID(), req.SpanContext.TraceID())
		}
	}
	if req.SpanKind != trace.SpanKindServer || up.SpanKind != trace.SpanKindClient || dec.SpanKind != trace.SpanKindInternal {
		t.Errorf("kinds: request %v, upstream %v, decision %v; want server, client, internal", req.SpanKind, up.SpanKind, dec.SpanKind)
	}
	checkAttrs(t, "request", req, map[attribute.Key]string{
		AttrMethod: "tools/call", AttrToolName: "fs__read_file", AttrSession: "s1", AttrOperationName: "execute_tool",
	})
	checkAttrs(t, "decision", dec, map[attribute.Key]string{
		AttrServer: "fs", AttrTool: "read_file", AttrDecision: "allow", AttrRule: "mcp:fs:read_*", AttrGate: "policy", AttrGrantedBy: "rule",
	})
	checkAttrs(t, "upstream call", up, map[attribute.Key]string{
		AttrMethod: "tools/call", AttrToolName: "read_file", AttrServer: "fs",
	})
	for _, s := range spans {
		for _, kv := range s.Attributes {
			if strings.Contains(kv.Value.Emit(), "secret path") {
				t.Errorf("span %s carries the verdict's reason in %s", s.Name, kv.Key)
			}
		}
	}
	if got := req.Resource.Set().Len(); got == 0 {
		t.Error("spans have no resource")
	}
}

func checkAttrs(t *testing.T, name string, s tracetest.SpanStub, want map[attribute.Key]string) {
	t.Helper()
	got := attrs(s)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s span: %s = %q, want %q", name, k, got[k], v)
		}
	}
}

func TestFailedCallSpans(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		err           error
		wantErrorType string
		wantEvents    int
	}{
		{"an upstream failure records the error", errors.New("connection reset"), "", 1},
		{"a tool error result is a tool_error", fmt.Errorf("fs: %w", ErrToolResult), "tool_error", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tel, exp := newTracedTelemetry(t)
			tracedCall(t.Context(), tel, tt.err)
			up := spansByName(t, exp)["tools/call read_file"]
			if up.Status.Code != codes.Error || up.Status.Description != tt.err.Error() {
				t.Errorf("status = %v %q, want Error %q", up.Status.Code, up.Status.Description, tt.err)
			}
			if got := attrs(up)[AttrErrorType]; got != tt.wantErrorType {
				t.Errorf("error.type = %q, want %q", got, tt.wantErrorType)
			}
			if len(up.Events) != tt.wantEvents {
				t.Errorf("%d events, want %d", len(up.Events), tt.wantEvents)
			}
		})
	}
}

func TestHeadersCarryTheActiveSpan(t *testing.T) {
	t.Parallel()
	tel, exp := newTracedTelemetry(t)
	headers, meta := tracedCall(t.Context(), tel, nil)

	up := spansByName(t, exp)["tools/call read_file"]
	want := fmt.Sprintf("00-%s-%s-01", up.SpanContext.TraceID(), up.SpanContext.SpanID())
	if got := headers["traceparent"]; got != want {
		t.Errorf("Headers traceparent = %q, want %q (the upstream call span)", got, want)
	}
	if meta == nil || meta.AdditionalFields["traceparent"] != want {
		t.Errorf("InjectMeta = %+v, want traceparent %q", meta, want)
	}
	if got := tel.Headers(t.Context()); got != nil {
		t.Errorf("Headers without a span = %v, want nil", got)
	}
}

func TestInjectMetaDoesNotModifyTheClientsMeta(t *testing.T) {
	t.Parallel()
	tel, _ := newTracedTelemetry(t)
	clientParent := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	client := &mcp.Meta{ProgressToken: "p1", AdditionalFields: map[string]any{
		"traceparent": clientParent, "tracestate": "vendor=x", "other": "kept",
	}}
	ctx, span := tel.StartUpstreamCall(t.Context(), "fs", "read_file")
	defer span.End(nil)
	got := tel.InjectMeta(ctx, client)

	if client.AdditionalFields["traceparent"] != clientParent || client.AdditionalFields["tracestate"] != "vendor=x" {
		t.Errorf("client's meta was modified: %v", client.AdditionalFields)
	}
	if got.ProgressToken != "p1" || got.AdditionalFields["other"] != "kept" {
		t.Errorf("InjectMeta lost the client's fields: %+v", got)
	}
	if tp := got.AdditionalFields["traceparent"]; tp == clientParent || !strings.Contains(tp.(string), span.span.SpanContext().SpanID().String()) {
		t.Errorf("traceparent = %v, want the upstream call span's", tp)
	}
	if _, ok := got.AdditionalFields["tracestate"]; ok {
		t.Errorf("the client's tracestate was kept with a new traceparent: %v", got.AdditionalFields)
	}
	if got := tel.InjectMeta(t.Context(), client); got != client {
		t.Errorf("InjectMeta without a span = %+v, want the meta unchanged", got)
	}
}

func TestRequestSpanContinuesTheClientsTrace(t *testing.T) {
	t.Parallel()
	const traceID, parentID = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	traceparent := "00-" + traceID + "-" + parentID + "-01"
	tests := []struct {
		name    string
		extract func(tel *Telemetry, ctx context.Context) context.Context
	}{
		{"from params._meta", func(tel *Telemetry, ctx context.Context) context.Context {
			return tel.ExtractMeta(ctx, &mcp.Meta{AdditionalFields: map[string]any{"traceparent": traceparent}})
		}},
		{"from HTTP headers", func(tel *Telemetry, ctx context.Context) context.Context {
			r, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1/mcp", nil)
			r.Header.Set("Traceparent", traceparent)
			return tel.HTTPContext(ctx, r)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tel, exp := newTracedTelemetry(t)
			ctx := tt.extract(tel, t.Context())
			_, span := tel.StartRequest(ctx, Request{Method: "tools/call", Tool: "fs__read_file"})
			span.End(nil)
			spans := exp.GetSpans()
			if len(spans) != 1 {
				t.Fatalf("%d spans, want 1", len(spans))
			}
			s := spans[0]
			if s.SpanContext.TraceID().String() != traceID || s.Parent.SpanID().String() != parentID || !s.Parent.IsRemote() {
				t.Errorf("span in trace %v with parent %v (remote %v), want trace %s parent %s remote",
					s.SpanContext.TraceID(), s.Parent.SpanID(), s.Parent.IsRemote(), traceID, parentID)
			}
		})
	}
}

func TestUnsampledClientTraceIsNotRecorded(t *testing.T) {
	t.Parallel()
	tel, exp := newTracedTelemetry(t)
	ctx := tel.ExtractMeta(t.Context(), &mcp.Meta{AdditionalFields: map[string]any{
		"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00",
	}})
	_, span := tel.StartRequest(ctx, Request{Method: "tools/call"})
	span.End(nil)
	if n := len(exp.GetSpans()); n != 0 {
		t.Errorf("%d spans recorded under an unsampled parent, want 0", n)
	}
}

func TestTracingOffRecordsNoSpans(t *testing.T) {
	t.Parallel()
	tel := newTestTelemetry(t, Options{}) // metrics only
	headers, meta := tracedCall(t.Context(), tel, nil)
	if headers != nil || meta != nil {
		t.Errorf("Headers = %v, InjectMeta = %v; want nil without tracing", headers, meta)
	}
	ctx, span := tel.StartRequest(t.Context(), Request{Method: "tools/call"})
	if span.span != nil || ctx != t.Context() {
		t.Error("StartRequest without tracing started a span")
	}
}

// blackhole accepts connections and never answers: a collector that hangs.
func blackhole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

func TestOTLPShutdownDoesNotHang(t *testing.T) {
	t.Parallel()
	refused := func(t *testing.T) string { return testkit.FreeAddr(t) }
	tests := []struct {
		name string
		addr func(t *testing.T) string
	}{
		{"a collector that never answers", blackhole},
		{"no collector at all", refused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var cfg Config
			cfg.Tracing.OTLPEndpoint = "http://" + tt.addr(t)
			tel, err := New(Options{Config: cfg, Servers: []string{"fs"}})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			tracedCall(t.Context(), tel, nil)
			ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
			defer cancel()
			start := time.Now()
			err = tel.Shutdown(ctx)
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("Shutdown took %v with a 200ms deadline", d)
			}
			t.Logf("Shutdown: %v", err) // an error is expected: nothing took the spans
			if again := tel.Shutdown(t.Context()); !errors.Is(again, err) && again != err {
				t.Errorf("second Shutdown = %v, want the first's %v", again, err)
			}
		})
	}
}

type failingExporter struct {
	mu    sync.Mutex
	fail  bool
	calls int
}

func (e *failingExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls++
	if e.fail {
		return errors.New("collector down")
	}
	return nil
}

func (e *failingExporter) Shutdown(context.Context) error { return nil }

func TestExportFailuresAreLoggedOncePerOutage(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	inner := &failingExporter{fail: true}
	e := &loggingExporter{SpanExporter: inner, logger: slog.New(slog.NewTextHandler(&buf, nil)), endpoint: "http://127.0.0.1:4318/v1/traces"}
	for range 3 {
		if err := e.ExportSpans(t.Context(), nil); err != nil {
			t.Fatalf("ExportSpans = %v, want nil (logged instead)", err)
		}
	}
	inner.fail = false
	_ = e.ExportSpans(t.Context(), nil)
	_ = e.ExportSpans(t.Context(), nil)
	log := buf.String()
	if n := strings.Count(log, "collector down"); n != 1 {
		t.Errorf("the failure was logged %d times, want once:\n%s", n, log)
	}
	if n := strings.Count(log, "works again"); n != 1 {
		t.Errorf("the recovery was logged %d times, want once:\n%s", n, log)
	}
}
