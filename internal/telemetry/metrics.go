package telemetry

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/mcpwarden/mcpwarden/rules"
)

// Other is the label value that stands for every server, profile, tool or
// decision outside the known sets, so that no input can grow the number of
// series without bound.
const Other = "other"

// MaxKnownTools bounds the tools of one server that get their own tool
// label; the rest of a larger list are recorded as Other. MaxToolNameLen
// does the same for names longer than it: tool names come from the
// upstream, which mcpwarden does not trust.
const (
	MaxKnownTools  = 512
	MaxToolNameLen = 128
)

// CallBuckets are the upper bounds, in seconds, of the upstream call
// latency histogram: from a local file read to the default 120 s call
// timeout.
var CallBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}

// An Outcome is how an upstream call ended, the outcome label of
// mcpwarden_upstream_call_duration_seconds.
type Outcome uint8

// The outcomes.
const (
	// OutcomeOK: the upstream returned a result that is not an error.
	OutcomeOK Outcome = iota
	// OutcomeToolError: the upstream returned a result with isError set.
	OutcomeToolError
	// OutcomeFailed: no result; the call failed in the transport, timed
	// out, or the upstream was down or busy.
	OutcomeFailed
)

var outcomeNames = [...]string{OutcomeOK: "ok", OutcomeToolError: "tool_error", OutcomeFailed: "failed"}

// String returns "ok", "tool_error" or "failed", or Other for an unknown value.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return Other
}

// MarshalText returns the outcome's String.
func (o Outcome) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// ResultOutcome is the outcome of an upstream call that returned err and,
// when err is nil, a result whose isError field is isError.
func ResultOutcome(isError bool, err error) Outcome {
	switch {
	case err != nil:
		return OutcomeFailed
	case isError:
		return OutcomeToolError
	default:
		return OutcomeOK
	}
}

// metrics is the set of collectors on Telemetry's own registry.
type metrics struct {
	registry      *prometheus.Registry
	decisions     *prometheus.CounterVec   // server, tool, decision, profile
	shadowed      *prometheus.CounterVec   // server, decision
	callSeconds   *prometheus.HistogramVec // server, outcome
	upstreamUp    *prometheus.GaugeVec     // server
	restarts      *prometheus.CounterVec   // server
	sessions      prometheus.Gauge
	evictions     *prometheus.CounterVec // cap
	asks          prometheus.Gauge
	auditFailures prometheus.Counter
}

func newMetrics(servers []string, version string) *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpwarden_decisions_total",
			Help: "Policy decisions on tools/call, by server, upstream tool name, decision (allow, ask, deny) and client profile (empty for none).",
		}, []string{"server", "tool", "decision", "profile"}),
		shadowed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpwarden_shadow_decisions_total",
			Help: "Requests shadow mode (enforce: shadow) let through that the policy would have asked about or denied, by server and would-be decision (ask, deny).",
		}, []string{"server", "decision"}),
		callSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcpwarden_upstream_call_duration_seconds",
			Help:    "Time from forwarding a tools/call to its upstream until the result, by server and outcome (ok, tool_error, failed).",
			Buckets: CallBuckets,
		}, []string{"server", "outcome"}),
		upstreamUp: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "mcpwarden_upstream_up",
			Help: "Whether the upstream server's session is up (1) or down (0).",
		}, []string{"server"}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpwarden_upstream_restarts_total",
			Help: "Times the upstream server came back up after being lost or failing to start.",
		}, []string{"server"}),
		sessions: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mcpwarden_sessions_active",
			Help: "Client sessions currently open.",
		}),
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpwarden_sessions_evicted_total",
			Help: "Idle HTTP sessions ended to make room for a new one, by the cap that was reached (principal: http.max_sessions_per_principal, global: http.max_sessions).",
		}, []string{"cap"}),
		asks: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mcpwarden_asks_pending",
			Help: "Ask decisions currently waiting for a human's answer.",
		}),
		auditFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcpwarden_audit_write_failures_total",
			Help: "Audit events that could not be written.",
		}),
	}
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "mcpwarden_build_info",
		Help:        "Always 1; the version label is the running mcpwarden's.",
		ConstLabels: prometheus.Labels{"version": version},
	})
	build.Set(1)
	m.registry.MustRegister(
		m.decisions, m.shadowed, m.callSeconds, m.upstreamUp, m.restarts,
		m.sessions, m.evictions, m.asks, m.auditFailures, build,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	// Series for every configured server exist from the start, so that a
	// server that never comes up shows as 0 rather than as missing.
	for _, c := range []SessionCap{CapPrincipal, CapGlobal} {
		m.evictions.WithLabelValues(c.String())
	}
	for _, s := range servers {
		m.upstreamUp.WithLabelValues(s).Set(0)
		m.restarts.WithLabelValues(s)
	}
	return m
}

// SetKnownTools sets the tools of server that are recorded under their own
// name in the tool label; any other tool of that server is recorded as
// Other. Call it with the upstream tool names (not wire names) whenever the
// server's tool list is (re)listed. A server outside Options.Servers is
// ignored. It is safe to call concurrently with everything else.
func (t *Telemetry) SetKnownTools(server string, tools []string) {
	if t == nil || !t.servers[server] {
		return
	}
	set := make(map[string]struct{}, min(len(tools), MaxKnownTools))
	for _, name := range tools {
		if len(set) == MaxKnownTools {
			break
		}
		if len(name) <= MaxToolNameLen {
			set[name] = struct{}{}
		}
	}
	t.toolsMu.Lock()
	defer t.toolsMu.Unlock()
	old := *t.tools.Load()
	next := make(map[string]map[string]struct{}, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[server] = set
	t.tools.Store(&next)
}

// Decision counts one policy decision. profile is the client profile (""
// for none), server and tool the upstream server and tool names. Call it
// once per decided tools/call, including calls refused before the rules
// were consulted.
func (t *Telemetry) Decision(profile, server, tool string, d rules.Decision) {
	if t == nil {
		return
	}
	decision := Other
	if d <= rules.Allow {
		decision = d.String()
	}
	t.metrics.decisions.WithLabelValues(t.serverLabel(server), t.toolLabel(server, tool), decision, t.profileLabel(profile)).Inc()
}

// ShadowDecision counts one request to server that shadow mode let
// through although the policy decided d, ask or deny, for it: the
// disruption enforcing the policy would cause.
func (t *Telemetry) ShadowDecision(server string, d rules.Decision) {
	if t == nil {
		return
	}
	decision := Other
	if d < rules.Allow {
		decision = d.String()
	}
	t.metrics.shadowed.WithLabelValues(t.serverLabel(server), decision).Inc()
}

// Call records the latency of one forwarded call to server.
func (t *Telemetry) Call(server string, d time.Duration, o Outcome) {
	if t == nil {
		return
	}
	t.metrics.callSeconds.WithLabelValues(t.serverLabel(server), o.String()).Observe(d.Seconds())
}

// UpstreamUp records whether server's session is up: true on connected and
// restarted, false on failed and lost.
func (t *Telemetry) UpstreamUp(server string, up bool) {
	if t == nil {
		return
	}
	if t.servers[server] {
		t.upMu.Lock()
		t.up[server] = up
		t.wasUp[server] = t.wasUp[server] || up
		t.upMu.Unlock()
	}
	v := 0.0
	if up {
		v = 1
	}
	t.metrics.upstreamUp.WithLabelValues(t.serverLabel(server)).Set(v)
}

// UpstreamRestarted counts one restart of server (upstream.EventRestarted).
func (t *Telemetry) UpstreamRestarted(server string) {
	if t == nil {
		return
	}
	t.metrics.restarts.WithLabelValues(t.serverLabel(server)).Inc()
}

// SessionOpened and SessionClosed track the open client sessions; call
// them from the session register and unregister hooks.
func (t *Telemetry) SessionOpened() { t.record(func(m *metrics) { m.sessions.Inc() }) }

// SessionClosed is the counterpart of SessionOpened.
func (t *Telemetry) SessionClosed() { t.record(func(m *metrics) { m.sessions.Dec() }) }

// A SessionCap is the cap on HTTP sessions that a new session reached,
// the cap label of mcpwarden_sessions_evicted_total.
type SessionCap uint8

// The caps.
const (
	// CapPrincipal is http.max_sessions_per_principal.
	CapPrincipal SessionCap = iota + 1
	// CapGlobal is http.max_sessions.
	CapGlobal
)

// String returns "principal" or "global", or Other for an unknown value.
func (c SessionCap) String() string {
	switch c {
	case CapPrincipal:
		return "principal"
	case CapGlobal:
		return "global"
	}
	return Other
}

// SessionEvicted counts an idle session ended to make room under cap.
func (t *Telemetry) SessionEvicted(c SessionCap) {
	t.record(func(m *metrics) { m.evictions.WithLabelValues(c.String()).Inc() })
}

// AskStarted and AskEnded track the asks waiting for an answer; call
// AskEnded exactly once for every AskStarted, however the ask ends.
func (t *Telemetry) AskStarted() { t.record(func(m *metrics) { m.asks.Inc() }) }

// AskEnded is the counterpart of AskStarted.
func (t *Telemetry) AskEnded() { t.record(func(m *metrics) { m.asks.Dec() }) }

// AuditWriteFailed counts one audit event that could not be written.
func (t *Telemetry) AuditWriteFailed() { t.record(func(m *metrics) { m.auditFailures.Inc() }) }

// record runs f on t's metrics; a nil Telemetry records nothing.
func (t *Telemetry) record(f func(*metrics)) {
	if t != nil {
		f(t.metrics)
	}
}

func (t *Telemetry) serverLabel(server string) string {
	if t.servers[server] {
		return server
	}
	return Other
}

func (t *Telemetry) profileLabel(profile string) string {
	if profile == "" || t.profiles[profile] {
		return profile
	}
	return Other
}

func (t *Telemetry) toolLabel(server, tool string) string {
	if _, ok := (*t.tools.Load())[server][tool]; ok {
		return tool
	}
	return Other
}
