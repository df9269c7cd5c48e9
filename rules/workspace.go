package rules

import "strings"

// outside counts the path-like argument values outside every workspace
// directory of a gate.
type outside struct {
	n     int
	first string // the smallest such value, for a stable Reason
}

func (o *outside) add(s string) {
	if o.n == 0 || s < o.first {
		o.first = s
	}
	o.n++
}

func (o *outside) reason(g *gate) string {
	return "path " + quote(o.first) + " is outside the workspace of " + g.name + "; outside_workspace is " + g.outside.String()
}

// outside finds the values under path-like keys anywhere in the arguments
// (nested objects and arrays included) that are outside g's workspace.
func (x *evalCtx) outside(g *gate, out *outside) {
	x.eachPath(x.args, func(v any) bool {
		if s, ok := v.(string); ok {
			x.check(g, s, out)
		}
		return false
	})
}

// check adds s to out when any of its forms is outside g's workspace or its
// location cannot be known.
func (x *evalCtx) check(g *gate, s string, out *outside) {
	var first string
	x.env.forms(s, func(form string, known bool) bool {
		switch {
		case !known:
			first = s
		case !x.inWorkspace(g, form):
			first = form
		default:
			return false
		}
		return true
	})
	if first != "" {
		out.add(first)
	}
}

// eachPath calls fn with every value under a path-like key anywhere in v
// (nested objects and arrays included, arrays flattened, empty ones
// skipped), and with every `file:` URI under a URL-like key, until fn
// returns true; it reports whether fn did. Objects under a path-like key
// are searched for path-like keys, not passed to fn.
func (x *evalCtx) eachPath(v any, fn func(any) bool) bool {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			switch {
			case x.p.pathKeys.has(k):
				if pathValues(e, fn) {
					return true
				}
			case x.p.urlKeys.has(k):
				if fileURIs(e, fn) {
					return true
				}
			}
			if x.eachPath(e, fn) {
				return true
			}
		}
	case []any:
		for _, e := range t {
			if x.eachPath(e, fn) {
				return true
			}
		}
	}
	return false
}

// pathValues calls fn with the scalars of v, a value at a path-like key.
func pathValues(v any, fn func(any) bool) bool {
	switch t := v.(type) {
	case map[string]any:
		return false
	case []any:
		for _, e := range t {
			if pathValues(e, fn) {
				return true
			}
		}
		return false
	case []string:
		for _, e := range t {
			if fn(e) {
				return true
			}
		}
		return false
	}
	return fn(v)
}

// fileURIs calls fn with the `file:` URIs of v, a value at a URL-like key.
func fileURIs(v any, fn func(any) bool) bool {
	return pathValues(v, func(e any) bool {
		s, ok := e.(string)
		if !ok {
			return false
		}
		if scheme, ok := uriScheme(s); ok && strings.EqualFold(scheme, "file") {
			return fn(s)
		}
		return false
	})
}

// inWorkspace reports whether the clean absolute path p is within one of
// g's workspace directories (case-folded when paths compare so).
func (x *evalCtx) inWorkspace(g *gate, p string) bool {
	p = x.env.foldPath(p)
	for _, d := range g.workspace {
		if within(p, x.env.foldPath(d)) {
			return true
		}
	}
	if g.fromRoots {
		for _, r := range x.roots {
			if d, ok := cleanRoot(r); ok && within(p, x.env.foldPath(d)) {
				return true
			}
		}
	}
	return false
}

// coversAll reports whether r, a matching allow rule, has an `=` or `~=`
// condition on every path-like value that is outside g's workspace, so that
// it overrides outside_workspace.
func (r *rule) coversAll(x *evalCtx, g *gate, out *outside) bool {
	if r.coverAll {
		return true
	}
	var n outside
	for _, segs := range r.cover {
		x.at(g, x.args, segs, &n)
	}
	return n.n == out.n
}

// at counts the outside values at segs, walking arrays as resolve does.
func (x *evalCtx) at(g *gate, v any, segs []string, out *outside) {
	if len(segs) == 0 {
		pathValues(v, func(e any) bool {
			if s, ok := e.(string); ok {
				x.check(g, s, out)
			}
			return false
		})
		return
	}
	switch t := v.(type) {
	case map[string]any:
		if e, ok := lookup(t, segs[0]); ok {
			x.at(g, e, segs[1:], out)
		}
	case []any:
		for _, e := range t {
			x.at(g, e, segs, out)
		}
	}
}
