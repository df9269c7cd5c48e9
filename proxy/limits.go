package proxy

import (
	"context"

	"github.com/mcpwarden/mcpwarden/rules"
)

// The requests of each limit (docs/design.md, "Deciding a request") are
// counted in fixed windows in the state store (see policy_state.go), per
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
