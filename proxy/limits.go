package proxy

import (
	"context"
	"sync"
	"time"

	"github.com/mcpwarden/mcpwarden/rules"
)

// limitPruneAt is the number of counters at which counting sweeps out
// those whose window has ended, so that ended sessions do not pile up.
const limitPruneAt = 4096

// limitCounters count the requests of each limit (docs/design.md, "Deciding a request") in fixed
// windows, in memory, per session, principal or globally. A request
// without a session (one an ephemeral HTTP session serves) is counted
// with its principal's, as armed labels are. It is safe for concurrent
// use.
type limitCounters struct {
	mu sync.Mutex
	m  map[limitKey]*limitWindow
}

// A limitKey is one limit's counter for one session, principal or all.
type limitKey struct {
	limit string // rules.Limit.Text
	scope rules.LimitScope
	who   string // the session id or principal; "" for a global limit
}

// A limitWindow is the count of one key in its current window.
type limitWindow struct {
	end time.Time // when the window ends
	n   int
}

// count counts one request of session by principal against l at now and
// returns its number in l's current window.
func (lc *limitCounters) count(l *rules.Limit, session, principal string, now time.Time) int {
	key := limitKeyFor(l, session, principal)
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.m == nil {
		lc.m = map[limitKey]*limitWindow{}
	}
	w := lc.m[key]
	if w == nil {
		if len(lc.m) >= limitPruneAt {
			lc.prune(now)
		}
		w = &limitWindow{}
		lc.m[key] = w
	}
	if !now.Before(w.end) {
		w.end, w.n = now.Add(l.Window), 0
	}
	w.n++
	return w.n
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

// prune drops the counters whose window has ended by now: counting
// again would start a new window anyway. lc.mu is held.
func (lc *limitCounters) prune(now time.Time) {
	for k, w := range lc.m {
		if !now.Before(w.end) {
			delete(lc.m, k)
		}
	}
}

// overLimits counts c against each limit its request matches, as rc, and
// escalates v by those it exceeds. A call already denied is not counted:
// it cannot reach the upstream. A call that cannot be counted (the shared
// state is unavailable) is denied.
func (s *Server) overLimits(ctx context.Context, c *call, rc rules.Call, v rules.Verdict) rules.Verdict {
	if v.Decision == rules.Deny {
		return v
	}
	now := time.Now()
	for _, l := range c.policy.Limits(rc) {
		n, err := s.limits.tally(ctx, l, c.session, c.principal, now)
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
