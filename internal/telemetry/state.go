package telemetry

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpwarden/mcpwarden/internal/state"
)

// StateBuckets are the upper bounds, in seconds, of the shared state
// latency histogram: from a Redis round trip on one host to the default
// 2 s timeout of one command (waiting for an answer takes longer and
// lands in +Inf).
var StateBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}

// The values of the error label of mcpwarden_state_errors_total.
const (
	stateErrUnavailable = "unavailable" // the shared state could not be reached (state.ErrUnavailable)
	stateErrOther       = "other"       // any other failure: a value that did not decode, the store closed
)

// A StateMetrics is the state.Observer a shared state store is opened
// with: it counts the store's operations, their failures (not-found and
// already-exists are outcomes, not failures) and latency by operation,
// and the resubscriptions of the answers channel, as the
// mcpwarden_state_* metrics. It is made before the store, which the
// Telemetry serving it (Options.State) may check for readiness. It is
// safe for concurrent use; a nil *StateMetrics records nothing.
type StateMetrics struct {
	ops     *prometheus.CounterVec   // op
	errs    *prometheus.CounterVec   // op, error
	seconds *prometheus.HistogramVec // op
	resubs  prometheus.Counter
}

var _ state.Observer = (*StateMetrics)(nil)

// NewStateMetrics returns StateMetrics with a series for every operation
// at zero, so that a dashboard sees them before the first call.
func NewStateMetrics() *StateMetrics {
	m := &StateMetrics{
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpwarden_state_operations_total",
			Help: "Operations on the shared state (state.url), by operation.",
		}, []string{"op"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpwarden_state_errors_total",
			Help: "Operations on the shared state that failed, by operation and error: unavailable (the state could not be reached; the request was refused) or other.",
		}, []string{"op", "error"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcpwarden_state_operation_duration_seconds",
			Help:    "Time an operation on the shared state took, by operation (wait_answer includes the wait for a human).",
			Buckets: StateBuckets,
		}, []string{"op"}),
		resubs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcpwarden_state_resubscriptions_total",
			Help: "Times the subscription to answers came back after the connection to the shared state was lost.",
		}),
	}
	for _, op := range state.AllOps() {
		m.ops.WithLabelValues(op.String())
		m.errs.WithLabelValues(op.String(), stateErrUnavailable)
		m.seconds.WithLabelValues(op.String())
	}
	return m
}

// Observe implements state.Observer.
func (m *StateMetrics) Observe(op state.Op, took time.Duration, err error) {
	if m == nil {
		return
	}
	name := op.String()
	m.ops.WithLabelValues(name).Inc()
	m.seconds.WithLabelValues(name).Observe(took.Seconds())
	if state.IsFailure(err) {
		kind := stateErrOther
		if errors.Is(err, state.ErrUnavailable) {
			kind = stateErrUnavailable
		}
		m.errs.WithLabelValues(name, kind).Inc()
	}
}

// Resubscribed implements state.Observer.
func (m *StateMetrics) Resubscribed() {
	if m != nil {
		m.resubs.Inc()
	}
}

// collectors are m's collectors, for a registry.
func (m *StateMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.ops, m.errs, m.seconds, m.resubs}
}
