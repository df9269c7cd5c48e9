package rules

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
// (nested objects and arrays included) that are outside g's workspace. A
// value whose location is unknown (see normalisePath) is outside.
func (x *evalCtx) outside(g *gate, out *outside) {
	x.eachPath(x.args, func(s string) { x.check(g, s, out) })
}

// check adds s to out when it is outside g's workspace.
func (x *evalCtx) check(g *gate, s string, out *outside) {
	if p, known := normalisePath(s, x.root); !known {
		out.add(s)
	} else if !x.inWorkspace(g, p) {
		out.add(p)
	}
}

// eachPath calls fn with every string under a path-like key anywhere in v
// (nested objects and arrays included): a string, or the strings of an
// array of them (nested arrays flattened). Other values are not paths.
func (x *evalCtx) eachPath(v any, fn func(string)) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if x.p.pathKeys.has(k) {
				pathStrings(e, fn)
			}
			x.eachPath(e, fn)
		}
	case []any:
		for _, e := range t {
			x.eachPath(e, fn)
		}
	}
}

func pathStrings(v any, fn func(string)) {
	switch t := v.(type) {
	case string:
		fn(t)
	case []any:
		for _, e := range t {
			pathStrings(e, fn)
		}
	case []string:
		for _, e := range t {
			fn(e)
		}
	}
}

func (x *evalCtx) inWorkspace(g *gate, p string) bool {
	for _, d := range g.workspace {
		if within(p, d) {
			return true
		}
	}
	if g.fromRoots {
		for _, r := range x.roots {
			if d, ok := cleanRoot(r); ok && within(p, d) {
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
	var n outside
	for _, segs := range r.cover {
		x.at(g, x.args, segs, &n)
	}
	return n.n == out.n
}

// at counts the outside values at segs, walking arrays as resolve does.
func (x *evalCtx) at(g *gate, v any, segs []string, out *outside) {
	if len(segs) == 0 {
		pathStrings(v, func(s string) { x.check(g, s, out) })
		return
	}
	switch t := v.(type) {
	case map[string]any:
		if e, ok := t[segs[0]]; ok {
			x.at(g, e, segs[1:], out)
		}
	case []any:
		for _, e := range t {
			x.at(g, e, segs, out)
		}
	}
}
