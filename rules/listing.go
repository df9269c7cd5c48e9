package rules

// Hidden reports whether the tool c.Server/c.Tool is hidden from tools/list:
// it is iff the policy denies it outright (DeniesOutright) and the call is
// enforced, not shadowed (see Enforcement): under shadow mode a call to it
// would be forwarded, so it is listed. c.Arguments are ignored. A nil policy
// and an unknown profile hide everything, as Decide denies everything for
// them.
func (p *Policy) Hidden(c Call) bool {
	return p.DeniesOutright(c) && p.Enforcement(c.Server, c.Profile) != EnforceShadow
}

// DeniesOutright reports whether a deny rule without argument conditions
// matches the tool c.Server/c.Tool in any gate that applies to the call,
// whatever the enforce mode: the tools Hidden hides, and those shadow mode
// lists with a "would deny". c.Arguments are ignored. A nil policy and an
// unknown profile deny everything outright.
func (p *Policy) DeniesOutright(c Call) bool {
	gs, n, ok := p.gates(&c)
	if !ok {
		return true
	}
	for _, g := range gs[:n] {
		l := &g.lists[ListDeny]
		a, b, d := l.candidates(c.Server, c.Tool)
		for len(a)+len(b)+len(d) > 0 {
			r := l.rules[popMin(&a, &b, &d)]
			if len(r.conds) == 0 && r.matchesName(c.Server, c.Tool) {
				return true
			}
		}
	}
	return false
}

// A Fallback is what becomes of an ask that no one answered: the value
// of ask_fallback.
type Fallback string

// The fallbacks. FallbackNone (not set) refuses, as FallbackDeny does.
const (
	FallbackNone  Fallback = ""
	FallbackDeny  Fallback = "deny"
	FallbackAllow Fallback = "allow"
)

// AskFallback returns the effective ask_fallback for the call's gates:
// FallbackDeny if any applicable gate says deny (a nil policy and an
// unknown profile count as deny), else FallbackAllow if the global or the
// server gate says allow, else FallbackNone. A profile can only narrow, so
// its allow is ignored.
func (p *Policy) AskFallback(c Call) Fallback {
	gs, n, ok := p.gates(&c)
	if !ok {
		return FallbackDeny
	}
	fallback := FallbackNone
	for i, g := range gs[:n] {
		profile := c.Profile != "" && i == n-1
		switch {
		case g.askFallback == FallbackDeny:
			return FallbackDeny
		case g.askFallback == FallbackAllow && !profile:
			fallback = FallbackAllow
		}
	}
	return fallback
}

// gates returns the n gates that apply to a call, in the order global,
// server (if it has a policy), profile (if c.Profile is set); ok is false for
// an unknown profile and a nil policy.
func (p *Policy) gates(c *Call) (gs [3]*gate, n int, ok bool) {
	if p == nil {
		return gs, 0, false
	}
	gs[0], n = &p.global, 1
	if srv := p.servers[c.Server]; srv.gate != nil {
		gs[n], n = srv.gate, n+1
	}
	if c.Profile != "" {
		g := p.profiles[c.Profile]
		if g == nil {
			return gs, n, false
		}
		gs[n], n = g, n+1
	}
	return gs, n, true
}
