// Package telemetry is mcpwarden's observability: Prometheus metrics on a
// registry of its own, served on metrics.listen, and OpenTelemetry traces
// exported over OTLP/HTTP to tracing.otlp_endpoint, with W3C trace context
// passed on to upstreams. Both are off unless configured.
//
// The proxy holds a *Telemetry and calls it unconditionally: a nil
// *Telemetry is a valid no-op whose every method returns at once, so a
// proxy without telemetry pays a nil check per call. Label values are
// bounded by the configuration (servers, profiles) and by the tool lists
// the proxy registers with SetKnownTools; anything else is recorded as
// Other, so neither a client nor an upstream can grow the number of series.
// Nothing here touches the OpenTelemetry or Prometheus globals.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpwarden/mcpwarden/internal/httpserve"
)

// MetricsPath is where Serve serves the metrics.
const MetricsPath = "/metrics"

// Options configure a Telemetry. Only Config is read from the config file;
// the rest comes from the program.
type Options struct {
	Config
	// Servers are the configured upstream server names, the only values
	// of the server label; Profiles likewise for the profile label.
	Servers, Profiles []string
	// ServiceVersion is reported as service.version on spans and as the
	// version label of mcpwarden_build_info; "" means "dev".
	ServiceVersion string
	// Logger receives the few things telemetry has to say (the metrics
	// address, span export failing and recovering); nil discards.
	Logger *slog.Logger
	// SpanExporter, when set, receives the spans instead of an OTLP
	// exporter, synchronously as each span ends, and turns tracing on
	// whatever Tracing says: for tests and in-process collectors
	// (go.opentelemetry.io/otel/sdk/trace/tracetest).
	SpanExporter sdktrace.SpanExporter
	// State, when set, are the metrics of the shared state store
	// (mcpwarden_state_*), registered with the others.
	State *StateMetrics
	// Checks are readiness checks besides the upstreams' (ReadyPath),
	// such as the shared state's reachability.
	Checks []Check
}

// A Telemetry records mcpwarden's metrics and traces. It is safe for
// concurrent use, and a nil *Telemetry does nothing.
type Telemetry struct {
	logger   *slog.Logger
	servers  map[string]bool // immutable after New
	profiles map[string]bool // immutable after New
	metrics  *metrics
	handler  http.Handler
	checks   []Check // immutable after New
	// serverNames are the configured servers, sorted, for readiness.
	serverNames []string

	upMu  sync.Mutex
	up    map[string]bool // whether each server's session is up, as UpstreamUp said
	wasUp map[string]bool // whether it has been up since the start

	// toolsMu serialises SetKnownTools, which replaces the map behind
	// tools (copy on write), so that reads on the hot path take no lock.
	toolsMu sync.Mutex
	tools   atomic.Pointer[map[string]map[string]struct{}]

	ln      net.Listener // nil without metrics.listen
	serving atomic.Bool

	provider *sdktrace.TracerProvider // nil without tracing
	tracer   trace.Tracer
	prop     propagation.TextMapPropagator

	shutdownOnce sync.Once
	shutdownErr  error
}

// New validates o.Config and builds a Telemetry. With metrics.listen set it
// binds the listener now, so that a port in use fails at startup rather
// than after clients are served; Serve then serves on it. With tracing on
// it builds the exporter, which connects only when it first exports.
func New(o Options) (*Telemetry, error) {
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	version := o.ServiceVersion
	if version == "" {
		version = "dev"
	}
	t := &Telemetry{
		logger:   logger,
		servers:  set(o.Servers),
		profiles: set(o.Profiles),
		metrics:  newMetrics(o.Servers, version),
		prop:     propagation.TraceContext{},
		checks:   slices.Clone(o.Checks),

		serverNames: sortedNames(o.Servers),
		up:          map[string]bool{},
		wasUp:       map[string]bool{},
	}
	if o.State != nil {
		t.metrics.registry.MustRegister(o.State.collectors()...)
	}
	t.tools.Store(&map[string]map[string]struct{}{})
	t.handler = promhttp.HandlerFor(t.metrics.registry, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(logger.Handler(), slog.LevelError),
		ErrorHandling: promhttp.ContinueOnError,
		Registry:      t.metrics.registry,
	})
	if err := t.startTracing(o, version); err != nil {
		return nil, err
	}
	if l := o.Metrics.Listen; l != "" {
		ln, err := net.Listen("tcp", l)
		if err != nil {
			_ = t.Shutdown(context.Background())
			return nil, fmt.Errorf("metrics.listen: %w", err)
		}
		t.ln = ln
	}
	return t, nil
}

func set(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// Handler serves the metrics in the Prometheus text (or OpenMetrics, if
// negotiated) format, on whatever path it is mounted; Serve mounts it at
// MetricsPath. A nil Telemetry's Handler answers 404.
func (t *Telemetry) Handler() http.Handler {
	if t == nil {
		return http.NotFoundHandler()
	}
	return t.handler
}

// Addr is the metrics listener's address, or nil without metrics.listen.
func (t *Telemetry) Addr() net.Addr {
	if t == nil || t.ln == nil {
		return nil
	}
	return t.ln.Addr()
}

// Serve serves Handler at MetricsPath, readiness at ReadyPath and liveness
// at LivePath on metrics.listen until ctx is done,
// then shuts the server down, giving scrapes in flight a few seconds.
// Without metrics.listen (or on a nil Telemetry) it returns nil at once.
// It may be called once.
func (t *Telemetry) Serve(ctx context.Context) error {
	if t == nil || t.ln == nil {
		return nil
	}
	if t.serving.Swap(true) {
		return errors.New("telemetry: Serve called twice")
	}
	mux := http.NewServeMux()
	mux.Handle(MetricsPath, t.handler)
	mux.Handle(ReadyPath, t.readyHandler())
	mux.Handle(LivePath, liveHandler())
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(t.logger.Handler(), slog.LevelWarn),
	}
	t.logger.Info("serving metrics", "url", "http://"+t.ln.Addr().String()+MetricsPath)
	served, err := httpserve.Run(ctx, srv, t.ln, 5*time.Second, nil)
	if served != nil {
		if errors.Is(served, net.ErrClosed) {
			return nil // closed by Shutdown
		}
		return fmt.Errorf("serving metrics: %w", served)
	}
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("shutting down metrics: %w", err)
	}
	return nil
}

// Shutdown flushes the spans not yet exported, waiting no longer than ctx
// allows, and stops tracing; it also closes the metrics listener, which
// ends a running Serve (cancel Serve's ctx first to let scrapes finish).
// Spans started after Shutdown are dropped; metrics still count. It is
// idempotent: later calls return the first call's error.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	t.shutdownOnce.Do(func() {
		var errs []error
		if t.provider != nil {
			if err := t.provider.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("flushing spans: %w", err))
			}
		}
		if t.ln != nil {
			if err := t.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
				errs = append(errs, fmt.Errorf("closing metrics listener: %w", err))
			}
		}
		t.shutdownErr = errors.Join(errs...)
	})
	return t.shutdownErr
}
