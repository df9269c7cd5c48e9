package rules

import "github.com/mcpwarden/mcpwarden/internal/keyfold"

// NamesExactly reports whether an allow rule of the global gate or of
// c.Server's gate matches c and has an `=` condition on the top-level
// argument key whose pattern is literal (no glob characters): a rule that
// names the value at key itself, where `key=*`, `key=10.*`, `key~=.*` or
// a rule without a condition on key name nothing. Profiles' gates are not
// read, since a profile only restricts. The proxy lets the egress proxy
// dial a special address (loopback, private, metadata, …) only for such a
// rule (`mcp:fetch:network/connect:host=127.0.0.1:port=8080`); whether c
// is allowed at all is Decide's to say.
func (p *Policy) NamesExactly(c Call, key string) bool {
	if p == nil {
		return false
	}
	srv := p.servers[c.Server]
	x := p.evalCtx(&c, srv)
	for _, g := range []*gate{&p.global, srv.gate} {
		if g == nil {
			continue
		}
		l := &g.lists[ListAllow]
		a, b, d := l.candidates(c.Server, c.Tool)
		for len(a)+len(b)+len(d) > 0 {
			r := l.rules[popMin(&a, &b, &d)]
			if !r.namesLiterally(key) {
				continue
			}
			if ok, _ := x.matchRule(g, r); ok {
				return true
			}
		}
	}
	return false
}

// namesLiterally reports whether r has an `=` condition with a literal
// pattern on the top-level argument key.
func (r *rule) namesLiterally(key string) bool {
	for i := range r.conds {
		c := &r.conds[i]
		if c.fact == factNone && c.op == opEq && len(c.segs) == 1 && keyfold.Equal(c.segs[0], key) && c.urlPart == urlNone && !c.urlWhole && isLiteral(c.pattern) {
			return true
		}
	}
	return false
}
