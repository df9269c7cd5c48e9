package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/rules"
)

// ScopeName is the instrumentation scope of mcpwarden's spans.
const ScopeName = "github.com/mcpwarden/mcpwarden"

// Span attribute keys. The mcp.* and gen_ai.* keys follow the OpenTelemetry
// semantic conventions for MCP; the mcpwarden.* keys are this proxy's.
const (
	AttrMethod        = attribute.Key("mcp.method.name")
	AttrSession       = attribute.Key("mcp.session.id")
	AttrToolName      = attribute.Key("gen_ai.tool.name")
	AttrOperationName = attribute.Key("gen_ai.operation.name")
	AttrErrorType     = attribute.Key("error.type")
	AttrServer        = attribute.Key("mcpwarden.server")
	AttrTool          = attribute.Key("mcpwarden.tool")
	AttrDecision      = attribute.Key("mcpwarden.decision")
	AttrRule          = attribute.Key("mcpwarden.rule")
	AttrGate          = attribute.Key("mcpwarden.gate")
	AttrGrantedBy     = attribute.Key("mcpwarden.granted_by")
)

// SpanDecide is the decision span's name. The request and upstream call
// spans are named "<method> <tool>", as the conventions say.
const SpanDecide = "mcpwarden.decide"

// ErrToolResult is what to pass to Span.End for a call whose result has
// isError set: the span gets status Error and error.type "tool_error"
// without an exception event.
var ErrToolResult = errors.New("tool result is an error")

// The W3C trace context keys, in HTTP headers and in params._meta.
const (
	keyTraceparent = "traceparent"
	keyTracestate  = "tracestate"
)

func (t *Telemetry) startTracing(o Options, version string) error {
	var proc sdktrace.SpanProcessor
	switch {
	case o.SpanExporter != nil:
		proc = sdktrace.NewSimpleSpanProcessor(o.SpanExporter)
	case o.Tracing.OTLPEndpoint != "":
		u, err := o.Tracing.endpoint()
		if err != nil {
			return fmt.Errorf("tracing.otlp_endpoint: %w", err) // checked by Validate
		}
		opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(u.String())}
		if len(o.Tracing.Headers) > 0 {
			opts = append(opts, otlptracehttp.WithHeaders(maps.Clone(o.Tracing.Headers)))
		}
		// The HTTP exporter does not connect until it first exports.
		exp, err := otlptracehttp.New(context.Background(), opts...)
		if err != nil {
			return fmt.Errorf("tracing: building the OTLP exporter: %w", err)
		}
		proc = sdktrace.NewBatchSpanProcessor(&loggingExporter{SpanExporter: exp, logger: t.logger, endpoint: u.Redacted()})
	default:
		return nil
	}
	ratio := o.Tracing.SampleRatio
	if ratio == 0 {
		ratio = 1
	}
	t.provider = sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(proc),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))),
		sdktrace.WithResource(resource.NewSchemaless(
			attribute.String("service.name", "mcpwarden"),
			attribute.String("service.version", version),
		)),
	)
	t.tracer = t.provider.Tracer(ScopeName, trace.WithInstrumentationVersion(version))
	return nil
}

// A loggingExporter logs export failures on the Telemetry's logger instead
// of OpenTelemetry's global error handler: the first failure of a run of
// them, and the recovery, so that a collector that is down does not flood
// the log.
type loggingExporter struct {
	sdktrace.SpanExporter
	logger   *slog.Logger
	endpoint string
	failing  atomic.Bool
}

func (e *loggingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if err := e.SpanExporter.ExportSpans(ctx, spans); err != nil {
		if !e.failing.Swap(true) {
			e.logger.Warn("exporting spans; spans are dropped until an export succeeds", "endpoint", e.endpoint, "spans", len(spans), "err", err)
		}
		return nil // logged; the batch processor would hand it to the global handler
	}
	if e.failing.Swap(false) {
		e.logger.Info("exporting spans works again", "endpoint", e.endpoint)
	}
	return nil
}

// A Request describes the client request a request span stands for.
type Request struct {
	// Method is the MCP method, such as "tools/call".
	Method string
	// Tool is the wire name of the tool called, for tools/call; it is part
	// of the span name, so it must be a tool the proxy serves.
	Tool string
	// Session is the client's MCP session ID, "" if it has none.
	Session string
}

// A Span is a request or upstream call span. The zero Span, which a nil
// Telemetry or one without tracing returns, does nothing.
type Span struct{ span trace.Span }

// End ends the span. A non-nil err marks it failed: ErrToolResult (or an
// error wrapping it) as a tool error, anything else as an error event.
func (s Span) End(err error) {
	if s.span == nil {
		return
	}
	if err != nil {
		if errors.Is(err, ErrToolResult) {
			s.span.SetAttributes(AttrErrorType.String("tool_error"))
		} else {
			s.span.RecordError(err)
		}
		s.span.SetStatus(codes.Error, err.Error())
	}
	s.span.End()
}

// A DecisionSpan covers deciding one call: evaluating the rules and, for
// an ask, waiting for the answer. The zero DecisionSpan does nothing.
type DecisionSpan struct{ span trace.Span }

// End records the verdict (decision, rule, gate; not the reason, which
// quotes argument values) and how it was settled (grantedBy, as in the
// audit event), and ends the span.
func (s DecisionSpan) End(v rules.Verdict, grantedBy audit.GrantedBy) {
	if s.span == nil {
		return
	}
	decision := Other
	if v.Decision <= rules.Allow {
		decision = v.Decision.String()
	}
	s.span.SetAttributes(
		AttrDecision.String(decision),
		AttrRule.String(v.Rule),
		AttrGate.String(v.Gate),
		AttrGrantedBy.String(grantedBy.String()),
	)
	s.span.End()
}

// StartRequest starts the span of one client request, a server span,
// child of any trace context in ctx (see HTTPContext and ExtractMeta). The
// returned ctx carries it; pass it on to StartDecision and
// StartUpstreamCall.
func (t *Telemetry) StartRequest(ctx context.Context, r Request) (context.Context, Span) {
	if t == nil || t.tracer == nil {
		return ctx, Span{}
	}
	name := r.Method
	attrs := make([]attribute.KeyValue, 0, 4)
	attrs = append(attrs, AttrMethod.String(r.Method))
	if r.Tool != "" {
		name += " " + truncate(r.Tool)
		attrs = append(attrs, AttrToolName.String(r.Tool))
	}
	if r.Method == string(mcp.MethodToolsCall) {
		attrs = append(attrs, AttrOperationName.String("execute_tool"))
	}
	if r.Session != "" {
		attrs = append(attrs, AttrSession.String(r.Session))
	}
	ctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	return ctx, Span{span}
}

// StartDecision starts the decision span for server's tool (upstream
// names), a child of the request span in ctx.
func (t *Telemetry) StartDecision(ctx context.Context, server, tool string) (context.Context, DecisionSpan) {
	if t == nil || t.tracer == nil {
		return ctx, DecisionSpan{}
	}
	ctx, span := t.tracer.Start(ctx, SpanDecide, trace.WithAttributes(
		AttrServer.String(server),
		AttrTool.String(tool),
	))
	return ctx, DecisionSpan{span}
}

// StartUpstreamCall starts the span of forwarding a tools/call to server's
// tool (upstream names), a client span and a child of the request span in
// ctx. Send the call with the returned ctx, so that Headers and InjectMeta
// name this span as the upstream's parent.
func (t *Telemetry) StartUpstreamCall(ctx context.Context, server, tool string) (context.Context, Span) {
	if t == nil || t.tracer == nil {
		return ctx, Span{}
	}
	ctx, span := t.tracer.Start(ctx, string(mcp.MethodToolsCall)+" "+truncate(tool),
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			AttrMethod.String(string(mcp.MethodToolsCall)),
			AttrToolName.String(tool),
			AttrServer.String(server),
		))
	return ctx, Span{span}
}

// Headers returns the W3C trace context headers (traceparent, and
// tracestate if any) for the span in ctx, to add to an HTTP request to an
// upstream; nil without tracing or without a span. Its signature is
// mcp-go's transport.HTTPHeaderFunc.
func (t *Telemetry) Headers(ctx context.Context) map[string]string {
	if t == nil || t.tracer == nil {
		return nil
	}
	c := propagation.MapCarrier{}
	t.prop.Inject(ctx, c)
	if len(c) == 0 {
		return nil
	}
	return c
}

// InjectMeta returns meta with the trace context of the span in ctx set
// as params._meta.traceparent (and tracestate), the convention of the
// OpenTelemetry MCP semantic conventions, for stdio upstreams and any
// other. meta itself is not modified: the result is a copy when anything
// is set, and meta unchanged (possibly nil) without tracing or a span. A
// traceparent the client sent is replaced, since the upstream's parent is
// the upstream call span.
func (t *Telemetry) InjectMeta(ctx context.Context, meta *mcp.Meta) *mcp.Meta {
	h := t.Headers(ctx)
	if h == nil {
		return meta
	}
	var out mcp.Meta
	if meta != nil {
		out = *meta
	}
	fields := make(map[string]any, len(out.AdditionalFields)+len(h))
	maps.Copy(fields, out.AdditionalFields)
	delete(fields, keyTracestate) // a client's tracestate belongs to its traceparent
	for k, v := range h {
		fields[k] = v
	}
	out.AdditionalFields = fields
	return &out
}

// ExtractMeta returns ctx carrying the remote trace context found in a
// request's params._meta (traceparent, tracestate), so that the request
// span is a child of the client's span; ctx unchanged if there is none or
// tracing is off. It takes precedence over HTTPContext's.
func (t *Telemetry) ExtractMeta(ctx context.Context, meta *mcp.Meta) context.Context {
	if t == nil || t.tracer == nil || meta == nil {
		return ctx
	}
	c := propagation.MapCarrier{}
	for _, k := range [...]string{keyTraceparent, keyTracestate} {
		if s, ok := meta.AdditionalFields[k].(string); ok {
			c[k] = s
		}
	}
	if len(c) == 0 {
		return ctx
	}
	return t.prop.Extract(ctx, c)
}

// HTTPContext returns ctx carrying the remote trace context in r's
// headers; ctx unchanged if there is none or tracing is off. Its signature
// is mcp-go's server.HTTPContextFunc, for server.WithHTTPContextFunc.
func (t *Telemetry) HTTPContext(ctx context.Context, r *http.Request) context.Context {
	if t == nil || t.tracer == nil {
		return ctx
	}
	return t.prop.Extract(ctx, propagation.HeaderCarrier(r.Header))
}

// truncate bounds a tool name in a span name.
func truncate(name string) string {
	if len(name) > MaxToolNameLen {
		return name[:MaxToolNameLen]
	}
	return name
}
