package rules

import (
	"strconv"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/enumtext"
)

// GateLimit is the Gate of a Verdict a limit decided.
const GateLimit = "limit"

// maxLimits bounds the limits of a Spec.
const maxLimits = 64

// A LimitScope says whose requests a limit counts together.
type LimitScope uint8

// The limit scopes.
const (
	// ScopeSession counts each client session's requests on their own.
	ScopeSession LimitScope = iota
	// ScopePrincipal counts each principal's requests, all its sessions
	// together.
	ScopePrincipal
	// ScopeGlobal counts every request together.
	ScopeGlobal
)

var scopeNames = enumtext.Names[LimitScope]{ScopeSession: "session", ScopePrincipal: "principal", ScopeGlobal: "global"}

// String returns the scope's config name, as in "session".
func (s LimitScope) String() string { return scopeNames.String(s, "LimitScope") }

// A LimitSpec is one limit as written in config, e.g. `{match:
// "mcp:mail:send_*", max: 20, per: principal, window: 1h, then: ask}`: at
// most Max requests matching the rule pattern Match in each Window,
// counted per Per (session, the default; principal; global); a request
// beyond them is decided at least Then (ask or deny), whatever allows it.
type LimitSpec struct {
	Match  string        `koanf:"match"`
	Max    int           `koanf:"max"`
	Per    string        `koanf:"per"`
	Window time.Duration `koanf:"window"`
	Then   string        `koanf:"then"`
	// Scope is the name an earlier version gave Per. It is read only so
	// that a config still using it gets an error saying what to write
	// instead; any value is refused.
	Scope string `koanf:"scope"`
}

// A Limit is a compiled LimitSpec as the counter needs it. The rules hold
// no state: the caller counts (see Policy.Limits) and hands an exceeded
// limit back to Policy.OverLimit.
type Limit struct {
	// Text names the limit, e.g.
	// `limits[0]: mcp:mail:send_* max 5 per session in 1m0s then ask`;
	// counters are keyed by it, so a reload that changes a limit starts
	// it afresh.
	Text   string
	Max    int
	Window time.Duration
	Per    LimitScope
	then   Decision
	g      gate // its deny list holds the one pattern, as a label's does
}

// limits compiles Spec.Limits; every problem names its config key.
func (c *compiler) limits(specs []LimitSpec) {
	if len(specs) > maxLimits {
		c.errorf("limits: %d limits, at most %d", len(specs), maxLimits)
	}
	for i, s := range specs {
		where := "limits[" + strconv.Itoa(i) + "]"
		l := Limit{Max: s.Max, Window: s.Window}
		l.g.name = where
		if r, err := c.rule(s.Match, ListDeny); err != nil {
			c.errs = append(c.errs, &RuleError{Where: where + ".match", Rule: s.Match, Column: column(s.Match, err.off), Msg: err.msg})
		} else {
			r.where = where + ".match"
			l.g.lists[ListDeny].add(r)
		}
		if s.Max < 1 {
			c.errorf("%s.max: %d, want at least 1", where, s.Max)
		}
		if s.Window <= 0 {
			c.errorf("%s.window: %v, want a positive duration such as 1m", where, s.Window)
		}
		switch {
		case s.Scope != "":
			c.errorf("%s.scope: not a limit key: write per: %s (whose requests are counted together) and the duration under window (window: 1h)", where, s.Scope)
		case s.Per == "":
		case !scopeNames.Set(&l.Per, s.Per):
			if _, err := time.ParseDuration(s.Per); err == nil {
				c.errorf("%s.per: %q is a duration; per is session, principal or global, and the duration goes under window (window: %s)", where, s.Per, s.Per)
			} else {
				c.errorf("%s.per: %q is not session, principal or global", where, s.Per)
			}
		}
		l.then = c.escalation(where+".then", s.Then)
		l.Text = where + ": " + s.Match + " max " + strconv.Itoa(s.Max) + " per " + l.Per.String() + " in " + s.Window.String() + " then " + s.Then
		c.p.limits = append(c.p.limits, l)
	}
}

// UsesLimits reports whether the policy has limits, so that the proxy
// need only count calls when it does. A nil Policy has none.
func (p *Policy) UsesLimits() bool {
	return p != nil && len(p.limits) > 0
}

// Limits returns the limits whose pattern the call matches, or nil when
// it matches none (then it does not allocate). It reads the same
// arguments and path forms as Decide.
func (p *Policy) Limits(c Call) []*Limit {
	if p == nil || len(p.limits) == 0 {
		return nil
	}
	x := p.evalCtx(&c, p.servers[c.Server])
	var out []*Limit
	for i := range p.limits {
		if r, _, _ := x.scan(&p.limits[i].g, ListDeny, nil); r != nil {
			out = append(out, &p.limits[i])
		}
	}
	return out
}

// OverLimit escalates v, the verdict of a call that exceeded l (its
// count in the window is count, beyond l.Max), to at least l's then:
// never lower. A deny stays as it is; an ask of another rule becomes the
// limit's (unless a flow rule made it), so that a session grant for
// that rule does not settle it.
func OverLimit(v Verdict, l *Limit, count int) Verdict {
	takesOver := l.then < v.Decision || l.then == v.Decision && v.Decision == Ask && v.Gate != GateFlow && v.Gate != GateLimit
	if !takesOver {
		return v
	}
	return Verdict{Decision: l.then, Rule: l.Text, Gate: GateLimit,
		Reason: "limit " + strconv.Quote(l.Text) + " exceeded: request " + strconv.Itoa(count) + " in " + l.Window.String() + " per " + l.Per.String()}
}

// Then is what the limit raises a request beyond it to: Ask or Deny.
func (l *Limit) Then() Decision { return l.then }
