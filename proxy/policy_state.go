package proxy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/state/memory"
	"github.com/mcpwarden/mcpwarden/proxy/ask"
	"github.com/mcpwarden/mcpwarden/proxy/inputrelay"
	"github.com/mcpwarden/mcpwarden/rules"
)

// What session-aware policy keeps between calls — limit counters and the
// labels each session has armed — is kept in a state.PolicyState: with
// Options.State, the state replicas share (docs/design.md, "Shared
// state"), so that a limit counts every replica's requests and a flow rule
// sees what the session received on any replica; without it, the embedded
// in-memory one (state/memory), this process's own. A label is armed once
// a request carrying it has returned, and the flow rules then escalate the
// session's later requests. A request without a session (an HTTP request
// served by an ephemeral session) arms and reads its principal's labels
// instead. Shared state that cannot be reached fails closed: a call that
// cannot be counted is denied, a session whose labels cannot be read is
// taken to have armed every label, and a result whose labels cannot be
// recorded is withheld.

// DefaultSharedGrantTTL is how long a session grant lives in the shared
// state. A grant dies with its session everywhere when the session is
// ended (DELETE revokes it); one whose session expired instead outlives
// it harmlessly until then, since a session ID is never issued twice.
const DefaultSharedGrantTTL = 24 * time.Hour

// ownGrantTTL is how long a session grant lives in the embedded store,
// the proxy's own: as long as its session, which revokes it as it ends.
const ownGrantTTL = 100 * 365 * 24 * time.Hour

// sharedLabelTTL is how long the labels of a session (or principal) live
// in the shared state after they were last armed. A session's labels are
// never dropped when it ends on one replica, since it may live on in
// another; they expire.
const sharedLabelTTL = 24 * time.Hour

// ownLabelTTL is how long labels live in the embedded store, this
// process's own: as long as the process (a principal's, which have no
// narrower scope that outlives a request), or until the session ends.
const ownLabelTTL = 100 * 365 * 24 * time.Hour

// stateUnavailable names the arming "call" of the labels taken as armed
// when the shared state cannot be read.
const stateUnavailable = "(shared state unavailable)"

// A sessionState is where what a session builds between requests is
// kept — its grants, armed labels, limit counts and multi round-trip
// request states — with one implementation: in store, either the state
// replicas share (shared) or the embedded in-memory store, this
// process's own, which no other replica reads.
type sessionState struct {
	store  state.Store
	shared bool
	// grantTTL and labelTTL are how long a session grant and a scope's
	// armed labels are kept (see newSessionState).
	grantTTL, labelTTL time.Duration
}

// newSessionState keeps the sessions' state in shared, the state replicas
// share (Options.State), or, when it is nil, in an embedded store holding
// at most maxPendingAsks request states, whose grants and labels live as
// long as their session (see end) or the process.
func newSessionState(shared state.Store) sessionState {
	if shared == nil {
		return sessionState{store: memory.New(memory.WithMaxTokens(maxPendingAsks)), grantTTL: ownGrantTTL, labelTTL: ownLabelTTL}
	}
	return sessionState{store: shared, shared: true, grantTTL: DefaultSharedGrantTTL, labelTTL: sharedLabelTTL}
}

// sharedStore is the state replicas share, nil when there is none.
func (ss sessionState) sharedStore() state.Store {
	if !ss.shared {
		return nil
	}
	return ss.store
}

// keeper is where the session grants and the multi round-trip request
// states are kept.
func (ss sessionState) keeper() ask.Keeper { return ask.Keeper{Store: ss.store, GrantTTL: ss.grantTTL} }

// inputs are where the calls waiting for a 2026-07-28 client's answers
// to their upstream's requests are kept (see inputRelay).
func (ss sessionState) inputs() inputrelay.Keeper { return inputrelay.Keeper{Store: ss.store} }

// labels are where the flow labels are kept.
func (ss sessionState) labels() storedLabels { return storedLabels{l: ss.store, ttl: ss.labelTTL} }

// counters are where the limits' counts are kept.
func (ss sessionState) counters() storedCounters { return storedCounters{ss.store} }

// end drops an ended session's grants and armed labels from the embedded
// store. The shared state keeps them, since the session may live on in
// another replica: its grants until a DELETE revokes them everywhere or
// they expire, its labels until they expire.
func (ss sessionState) end(session string) {
	if ss.shared || session == "" {
		return
	}
	ctx := context.Background() // the embedded store does not fail
	_ = ss.store.RevokeSession(ctx, session)
	_ = ss.store.DisarmLabels(ctx, labelScope(session, ""))
}

// storedCounters count limits in a state store, keyed by limitKeyFor; the
// window is timed by the store (Redis's clock, or this process's).
type storedCounters struct{ c state.Counters }

// tally counts one request of session by principal against l and returns
// its number in l's current window.
func (sc storedCounters) tally(ctx context.Context, l *rules.Limit, session, principal string) (int, error) {
	k := limitKeyFor(l, session, principal)
	n, err := sc.c.Incr(ctx, fmt.Sprintf("%s\x00%s\x00%s", k.limit, k.scope, k.who), l.Window)
	return int(n), err
}

// storedLabels keep armed labels in a state store, per session (per
// principal for a request without one), each scope for ttl after its last
// arming; a label already armed keeps its first arming call.
type storedLabels struct {
	l   state.Labels
	ttl time.Duration
}

// labelScope is the shared state's scope of the labels of a request of
// session by principal.
func labelScope(session, principal string) string {
	if session == "" {
		return "principal:" + principal
	}
	return "session:" + session
}

// armedOf returns the labels armed for a request of session by principal.
func (sl storedLabels) armedOf(ctx context.Context, session, principal string) ([]rules.Arming, error) {
	got, err := sl.l.ArmedLabels(ctx, labelScope(session, principal))
	if err != nil || len(got) == 0 {
		return nil, err
	}
	out := make([]rules.Arming, len(got))
	for i, a := range got {
		out[i] = rules.Arming{Label: a.Label, ID: a.ID, Tool: a.Tool}
	}
	return out, nil
}

// keep arms labels for session (or, without one, principal), each with the
// call that armed it.
func (sl storedLabels) keep(ctx context.Context, session, principal string, labels []string, id, tool string) error {
	if len(labels) == 0 {
		return nil
	}
	armed := make([]state.ArmedLabel, len(labels))
	for i, l := range labels {
		armed[i] = state.ArmedLabel{Label: l, ID: id, Tool: tool}
	}
	return sl.l.ArmLabels(ctx, labelScope(session, principal), armed, sl.ttl)
}

// everyLabelArmed is what a call whose session's labels cannot be read is
// taken to have seen: every label of p, so that each flow rule applies.
func everyLabelArmed(p *rules.Policy) []rules.Arming {
	names := p.LabelNames()
	out := make([]rules.Arming, len(names))
	for i, n := range names {
		out[i] = rules.Arming{Label: n, Tool: stateUnavailable}
	}
	return out
}

// uncounted is the verdict of a call that cannot be counted against l:
// a deny, since the count may be past the limit.
func uncounted(l *rules.Limit, err error) rules.Verdict {
	return rules.Verdict{Decision: rules.Deny, Rule: l.Text, Gate: rules.GateLimit,
		Reason: fmt.Sprintf("limit %q cannot be counted: %v", l.Text, err)}
}

// errLabelsNotKept is wrapped by the error of a call whose labels could
// not be recorded: its result is withheld, since a later call could not
// be escalated for what it carried.
var errLabelsNotKept = errors.New("the labels its result arms could not be recorded")

// armBy arms the labels of c, which has returned, in its session. It arms
// them even when the client has gone: the upstream has answered.
func (s *Server) armBy(ctx context.Context, c *call) error {
	if len(c.labels) == 0 {
		return nil
	}
	if err := s.armed.keep(context.WithoutCancel(ctx), c.session, c.principal, c.labels, c.decision, c.tool.Canonical); err != nil {
		s.logger.Warn("recording armed labels", "tool", c.tool.Canonical, "labels", c.labels, "err", err)
		return fmt.Errorf("%w: %w", errLabelsNotKept, err)
	}
	return nil
}

// armedFor returns the labels armed in c's session: every label, when
// they cannot be read (fail closed).
func (s *Server) armedFor(ctx context.Context, c *call) []rules.Arming {
	armed, err := s.armed.armedOf(ctx, c.session, c.principal)
	if err != nil {
		s.logger.Warn("reading armed labels; taking every label as armed", "tool", c.tool.Canonical, "err", err)
		return everyLabelArmed(c.policy)
	}
	return armed
}

// The requests of each limit (docs/design.md, "Deciding a request") are
// counted in fixed windows in the state store (sessionState), per
// session, principal or globally. A request without a session (one an
// ephemeral HTTP session serves) is counted with its principal's, as
// armed labels are.

// A limitKey is one limit's counter for one session, principal or all.
type limitKey struct {
	limit string // rules.Limit.Text
	scope rules.LimitScope
	who   string // the session id or principal; "" for a global limit
}

// limitKeyFor is the counter of l that a request of session by principal
// counts against.
func limitKeyFor(l *rules.Limit, session, principal string) limitKey {
	key := limitKey{limit: l.Text, scope: l.Per}
	switch {
	case l.Per == rules.ScopeSession && session != "":
		key.who = session
	case l.Per != rules.ScopeGlobal:
		key.scope, key.who = rules.ScopePrincipal, principal
	}
	return key
}

// overLimits counts c against each limit its request matches, as rc, and
// escalates v by those it exceeds. A call already denied is not counted:
// it cannot reach the upstream. A call that cannot be counted (the shared
// state is unavailable) is denied.
func (s *Server) overLimits(ctx context.Context, c *call, rc rules.Call, v rules.Verdict) rules.Verdict {
	if v.Decision == rules.Deny {
		return v
	}
	for _, l := range c.policy.Limits(rc) {
		n, err := s.limits.tally(ctx, l, c.session, c.principal)
		switch {
		case err != nil:
			s.logger.Warn("counting a limit", "limit", l.Text, "err", err)
			return uncounted(l, err)
		case n > l.Max:
			v = rules.OverLimit(v, l, n)
		}
	}
	return v
}
