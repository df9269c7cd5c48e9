package proxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/approvals"
	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/telemetry"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// traceSeen records the trace context an upstream received with each
// call: in params._meta and in the HTTP request's traceparent header.
type traceSeen struct {
	mu      sync.Mutex
	meta    []string
	headers []string
}

func (s *traceSeen) add(field *[]string, v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	*field = append(*field, v)
}

func (s *traceSeen) got() (meta, headers []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.meta...), append([]string(nil), s.headers...)
}

// A telEnv is a proxy with telemetry in front of an in-process upstream
// "up" with the tools echo, fail (a result with isError), write and rich.
type telEnv struct {
	srv  *Server
	tel  *telemetry.Telemetry
	exp  *tracetest.InMemoryExporter
	seen *traceSeen
}

func newTelEnv(t *testing.T, policy rules.PolicySpec, sink *memorySink, resolvers ...approvals.Resolver) *telEnv {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tel, err := telemetry.New(telemetry.Options{Servers: []string{"up"}, SpanExporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.WithoutCancel(t.Context())) })

	seen := &traceSeen{}
	s := testkit.NewStandIn()
	text := func(text string) server.ToolHandlerFunc {
		return func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Params.Meta != nil {
				if tp, ok := req.Params.Meta.AdditionalFields["traceparent"].(string); ok {
					seen.add(&seen.meta, tp)
				}
			}
			if text == "" {
				return mcp.NewToolResultError("it failed"), nil
			}
			return mcp.NewToolResultText(text), nil
		}
	}
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), text("echoed"))
	s.AddTool(mcp.NewTool("fail"), text(""))
	s.AddTool(mcp.NewTool("write", mcp.WithString("path")), text("written"))
	s.AddTool(mcp.NewTool("rich"), text("rich"))
	url := s.URL(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if tp := r.Header.Get("traceparent"); tp != "" {
				seen.add(&seen.headers, tp)
			}
			h.ServeHTTP(w, r)
		})
	})
	pool := upstream.Start(t.Context(), map[string]upstream.Spec{
		"up": {Transport: upstream.TransportHTTP, URL: url, HeaderFunc: tel.Headers},
	}, nil)
	t.Cleanup(func() { pool.Close() })
	if err := pool.Err("up"); err != nil {
		t.Fatal(err)
	}
	tools, err := pool.Tools("up")
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(tools))
	for i, tool := range tools {
		names[i] = tool.Name
	}
	tel.SetKnownTools("up", names) // as serve does on EventConnected

	p, err := rules.Compile(rules.Spec{Global: policy, Servers: map[string]rules.ServerSpec{"up": {}}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Upstream: pool, Policy: p, Audit: audit.New(sink, audit.Config{}), Telemetry: tel, Resolvers: resolvers})
	if err != nil {
		t.Fatal(err)
	}
	adopt(t, srv)
	return &telEnv{srv: srv, tel: tel, exp: exp, seen: seen}
}

func (e *telEnv) env() *env { return &env{srv: e.srv} }

// scrapeMetrics fetches tel's metrics and returns every sample by its
// series ("name{label="v",...}", labels in exposition order).
func scrapeMetrics(t *testing.T, tel *telemetry.Telemetry) map[string]float64 {
	t.Helper()
	return testkit.Scrape(t, tel.Handler(), telemetry.MetricsPath)
}

func decisions(tool string, d rules.Decision) string {
	return fmt.Sprintf(`mcpwarden_decisions_total{decision=%q,profile="",server="up",tool=%q}`, d, tool)
}

func callDurations(outcome string) string {
	return fmt.Sprintf(`mcpwarden_upstream_call_duration_seconds_count{outcome=%q,server="up"}`, outcome)
}

var telPolicy = rules.PolicySpec{
	Deny:  []string{"mcp:up:write:path=/etc/**", "mcp:up:rich"},
	Ask:   []string{"mcp:up:write:path=/tmp/**"},
	Allow: []string{"mcp:up:echo", "mcp:up:fail"},
}

func TestTelemetryCountsEachDecidedCallOnce(t *testing.T) {
	t.Parallel()
	e := newTelEnv(t, telPolicy, &memorySink{})
	c := e.env().client(t)
	before := scrapeMetrics(t, e.tel)

	const n = 5
	for i := range n {
		testkit.CallTool(t, c, "up__echo", map[string]any{"text": strconv.Itoa(i)})
	}
	testkit.CallTool(t, c, "up__fail", nil)
	testkit.CallTool(t, c, "up__write", map[string]any{"path": "/etc/passwd"})
	testkit.CallTool(t, c, "up__write", map[string]any{"path": "/etc/shadow"})
	testkit.CallTool(t, c, "up__write", map[string]any{"path": "/tmp/x"}) // ask; no client or resolver to ask, so the fallback denies
	// A hidden tool is refused by mcp-go before the handler; it is decided all the same.
	if _, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "up__rich"}}); err == nil {
		t.Error("calling a hidden tool succeeded")
	}
	// Malformed arguments are refused before the rules are consulted.
	send := rawSession(t, e.srv)
	send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__echo","arguments":{"text":"a","text":"b"}}}`)

	after := scrapeMetrics(t, e.tel)
	tests := []struct {
		series string
		want   float64
	}{
		{decisions("echo", rules.Allow), n},
		{decisions("echo", rules.Deny), 1},
		{decisions("fail", rules.Allow), 1},
		{decisions("write", rules.Deny), 2},
		{decisions("write", rules.Ask), 1},
		{decisions("rich", rules.Deny), 1},
		{callDurations("ok"), n},
		{callDurations("tool_error"), 1},
		{`mcpwarden_asks_pending`, 0},
		{`mcpwarden_audit_write_failures_total`, 0},
	}
	for _, tt := range tests {
		got, ok := after[tt.series]
		if !ok {
			t.Errorf("no series %s", tt.series)
			continue
		}
		if got -= before[tt.series]; got != tt.want {
			t.Errorf("%s moved by %v, want %v", tt.series, got, tt.want)
		}
	}
	var total float64
	for series, v := range after {
		if strings.HasPrefix(series, "mcpwarden_decisions_total{") {
			total += v - before[series]
		}
	}
	if want := float64(n + 6); total != want {
		t.Errorf("mcpwarden_decisions_total moved by %v in all, want %v (one per decided call)", total, want)
	}
}

func TestTelemetryCountsFailedAuditWrites(t *testing.T) {
	t.Parallel()
	e := newTelEnv(t, allowAll, &memorySink{fail: true})
	c := e.env().client(t)
	testkit.CallTool(t, c, "up__echo", map[string]any{"text": "x"})
	// The decision and the result events both fail.
	if got := scrapeMetrics(t, e.tel)[`mcpwarden_audit_write_failures_total`]; got != 2 {
		t.Errorf("mcpwarden_audit_write_failures_total = %v, want 2", got)
	}
}

func TestTelemetryTracksOpenSessions(t *testing.T) {
	t.Parallel()
	e := newTelEnv(t, allowAll, &memorySink{})
	inR, inW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- ServeStdio(t.Context(), e.srv, inR, io.Discard) }()
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 5*time.Second, "one open session", func() bool { return scrapeMetrics(t, e.tel)[`mcpwarden_sessions_active`] == 1 })
	inW.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("ServeStdio did not return")
	}
	if got := scrapeMetrics(t, e.tel)[`mcpwarden_sessions_active`]; got != 0 {
		t.Errorf("mcpwarden_sessions_active = %v after the session ended, want 0", got)
	}
}

// A heldResolver answers allow_once once released, recording the span
// its context carries.
type heldResolver struct {
	asked   chan trace.SpanContext
	release chan struct{}
}

func (r *heldResolver) Resolve(ctx context.Context, _ approvals.Request) (approvals.Decision, error) {
	r.asked <- trace.SpanContextFromContext(ctx)
	select {
	case <-r.release:
		return approvals.Decision{Answer: state.AllowOnce, Via: approvals.ViaResolver}, nil
	case <-ctx.Done():
		return approvals.Decision{Via: approvals.ViaResolver}, ctx.Err()
	}
}

func TestTelemetryCountsAnAskWhileItWaits(t *testing.T) {
	t.Parallel()
	r := &heldResolver{asked: make(chan trace.SpanContext, 1), release: make(chan struct{})}
	e := newTelEnv(t, telPolicy, &memorySink{}, r)
	c := e.env().client(t)
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "up__write", Arguments: map[string]any{"path": "/tmp/x"}}})
		done <- res
	}()
	var asked trace.SpanContext
	select {
	case asked = <-r.asked:
	case <-time.After(5 * time.Second):
		t.Fatal("the resolver was not asked")
	}
	if got := scrapeMetrics(t, e.tel)[`mcpwarden_asks_pending`]; got != 1 {
		t.Errorf("mcpwarden_asks_pending = %v while the resolver waits, want 1", got)
	}
	close(r.release)
	if res := <-done; res == nil || res.IsError {
		t.Fatalf("the allowed ask's result = %+v", res)
	}
	after := scrapeMetrics(t, e.tel)
	if got := after[`mcpwarden_asks_pending`]; got != 0 {
		t.Errorf("mcpwarden_asks_pending = %v after the answer, want 0", got)
	}
	if got := after[decisions("write", rules.Ask)]; got != 1 {
		t.Errorf("%s = %v, want 1", decisions("write", rules.Ask), got)
	}
	spans := spansNamed(e.exp)
	dec := spans[telemetry.SpanDecide]
	if len(dec) != 1 || asked.SpanID() != dec[0].SpanContext.SpanID() {
		t.Errorf("the resolver ran under span %v, want the decision span %v", asked.SpanID(), dec)
	}
	if got := attrOf(dec[0], telemetry.AttrGrantedBy); got != audit.GrantedByResolver.String() {
		t.Errorf("decision span granted_by = %q, want %q", got, audit.GrantedByResolver)
	}
}

func spansNamed(exp *tracetest.InMemoryExporter) map[string][]tracetest.SpanStub {
	out := map[string][]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		out[s.Name] = append(out[s.Name], s)
	}
	return out
}

func attrOf(s tracetest.SpanStub, key attribute.Key) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

func TestTelemetrySpansOfAForwardedCallAreLinked(t *testing.T) {
	t.Parallel()
	e := newTelEnv(t, telPolicy, &memorySink{})
	c := e.env().client(t)
	const clientTrace, clientSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{
		Name:      "up__echo",
		Arguments: map[string]any{"text": "hi"},
		Meta:      &mcp.Meta{AdditionalFields: map[string]any{"traceparent": "00-" + clientTrace + "-" + clientSpan + "-01"}},
	}})
	if err != nil || res.IsError {
		t.Fatalf("call = %+v, %v", res, err)
	}

	spans := spansNamed(e.exp)
	reqs, decs, ups := spans["tools/call up__echo"], spans[telemetry.SpanDecide], spans["tools/call echo"]
	if len(reqs) != 1 || len(decs) != 1 || len(ups) != 1 {
		t.Fatalf("spans %v, want one request, decision and upstream call span", spanNames(e.exp))
	}
	req, dec, up := reqs[0], decs[0], ups[0]
	if got := req.Parent.SpanID().String(); got != clientSpan || req.SpanContext.TraceID().String() != clientTrace {
		t.Errorf("request span's parent = %s in trace %s, want the client's %s in %s", got, req.SpanContext.TraceID(), clientSpan, clientTrace)
	}
	if req.SpanKind != trace.SpanKindServer || up.SpanKind != trace.SpanKindClient {
		t.Errorf("kinds: request %v, upstream call %v; want server, client", req.SpanKind, up.SpanKind)
	}
	for name, child := range map[string]tracetest.SpanStub{"decision": dec, "upstream call": up} {
		if child.Parent.SpanID() != req.SpanContext.SpanID() || child.SpanContext.TraceID() != req.SpanContext.TraceID() {
			t.Errorf("%s span's parent = %v, want the request span %v", name, child.Parent.SpanID(), req.SpanContext.SpanID())
		}
	}
	if got := attrOf(dec, telemetry.AttrDecision); got != "allow" {
		t.Errorf("decision span's decision = %q, want allow", got)
	}

	// The upstream's parent is the upstream call span, over both channels.
	want := "00-" + clientTrace + "-" + up.SpanContext.SpanID().String() + "-01"
	meta, headers := e.seen.got()
	if len(meta) != 1 || meta[0] != want {
		t.Errorf("upstream got params._meta.traceparent %q, want [%s]", meta, want)
	}
	if len(headers) != 1 || headers[0] != want {
		t.Errorf("upstream got traceparent headers %q, want [%s]", headers, want)
	}
}

func TestTelemetrySpansOfARefusedCall(t *testing.T) {
	t.Parallel()
	e := newTelEnv(t, telPolicy, &memorySink{})
	c := e.env().client(t)
	testkit.CallTool(t, c, "up__write", map[string]any{"path": "/etc/passwd"})
	testkit.CallTool(t, c, "up__fail", nil)

	spans := spansNamed(e.exp)
	if ups := spans["tools/call write"]; len(ups) != 0 {
		t.Errorf("a denied call has an upstream call span: %v", ups)
	}
	deny := spans["tools/call up__write"]
	if len(deny) != 1 || len(spans[telemetry.SpanDecide]) != 2 {
		t.Fatalf("spans %v, want a request and a decision span per call", spanNames(e.exp))
	}
	if deny[0].Status.Code.String() != "Error" || attrOf(deny[0], telemetry.AttrErrorType) != "tool_error" {
		t.Errorf("denied request span: status %v, error.type %q; want Error, tool_error", deny[0].Status, attrOf(deny[0], telemetry.AttrErrorType))
	}
	fail := spans["tools/call fail"]
	if len(fail) != 1 || attrOf(fail[0], telemetry.AttrErrorType) != "tool_error" {
		t.Errorf("upstream call span of a tool error = %v, want error.type tool_error", fail)
	}
}

func spanNames(exp *tracetest.InMemoryExporter) []string {
	var names []string
	for _, s := range exp.GetSpans() {
		names = append(names, s.Name)
	}
	return names
}
