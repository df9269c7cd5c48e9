package proxy

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/rules"
)

// What session-aware policy keeps between calls — limit counters and the
// labels each session has armed — is kept in this process's memory
// (limitCounters, armedLabels) or, with Options.State, in the state
// replicas share (docs/design.md, "Shared state"), so that a limit counts
// every replica's requests and a flow rule sees what the session received
// on any replica. Shared state that cannot be reached fails closed: a call
// that cannot be counted is denied, a session whose labels cannot be read
// is taken to have armed every label, and a result whose labels cannot be
// recorded is withheld.

// sharedLabelTTL is how long the labels of a session (or principal) live
// in the shared state after they were last armed. A session's labels are
// never dropped when it ends on one replica, since it may live on in
// another; they expire.
const sharedLabelTTL = 24 * time.Hour

// stateUnavailable names the arming "call" of the labels taken as armed
// when the shared state cannot be read.
const stateUnavailable = "(shared state unavailable)"

// policyKeepers returns where the labels and the limits' counts are
// kept: in ps when it is set, else in memory.
func policyKeepers(ps state.PolicyState) (labelKeeper, limitCounter) {
	if ps == nil {
		return &armedLabels{}, &limitCounters{}
	}
	return sharedLabels{ps}, sharedCounters{ps}
}

// A limitCounter counts requests against limits; see limitCounters.count.
type limitCounter interface {
	tally(ctx context.Context, l *rules.Limit, session, principal string, now time.Time) (int, error)
}

// A labelKeeper keeps the labels armed in each session; see armedLabels.
type labelKeeper interface {
	armedOf(ctx context.Context, session, principal string) ([]rules.Arming, error)
	keep(ctx context.Context, session, principal string, labels []string, id, tool string) error
	end(session string)
}

var (
	_ limitCounter = (*limitCounters)(nil)
	_ limitCounter = sharedCounters{}
	_ labelKeeper  = (*armedLabels)(nil)
	_ labelKeeper  = sharedLabels{}
)

func (lc *limitCounters) tally(_ context.Context, l *rules.Limit, session, principal string, now time.Time) (int, error) {
	return lc.count(l, session, principal, now), nil
}

func (a *armedLabels) armedOf(_ context.Context, session, principal string) ([]rules.Arming, error) {
	return a.of(session, principal), nil
}

func (a *armedLabels) keep(_ context.Context, session, principal string, labels []string, id, tool string) error {
	a.arm(session, principal, labels, id, tool)
	return nil
}

// sharedCounters count limits in the shared state, keyed as limitCounters
// keys them; the window is timed by the state (Redis's clock).
type sharedCounters struct{ c state.Counters }

func (sc sharedCounters) tally(ctx context.Context, l *rules.Limit, session, principal string, _ time.Time) (int, error) {
	k := limitKeyFor(l, session, principal)
	n, err := sc.c.Incr(ctx, fmt.Sprintf("%s\x00%s\x00%s", k.limit, k.scope, k.who), l.Window)
	return int(n), err
}

// sharedLabels keep armed labels in the shared state, per session (per
// principal for a request without one).
type sharedLabels struct{ l state.Labels }

// labelScope is the shared state's scope of the labels of a request of
// session by principal.
func labelScope(session, principal string) string {
	if session == "" {
		return "principal:" + principal
	}
	return "session:" + session
}

func (sl sharedLabels) armedOf(ctx context.Context, session, principal string) ([]rules.Arming, error) {
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

func (sl sharedLabels) keep(ctx context.Context, session, principal string, labels []string, id, tool string) error {
	if len(labels) == 0 {
		return nil
	}
	armed := make([]state.ArmedLabel, len(labels))
	for i, l := range labels {
		armed[i] = state.ArmedLabel{Label: l, ID: id, Tool: tool}
	}
	return sl.l.ArmLabels(ctx, labelScope(session, principal), armed, sharedLabelTTL)
}

// end keeps the labels: the session may live on in another replica.
func (sharedLabels) end(string) {}

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
