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
	x.nested(g, x.args, out)
}

func (x *evalCtx) nested(g *gate, v any, out *outside) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if x.p.pathKeys[k] {
				x.paths(g, e, out)
			}
			x.nested(g, e, out)
		}
	case []any:
		for _, e := range t {
			x.nested(g, e, out)
		}
	}
}

// paths checks the strings of a path-like value: a string, or an array of
// them (nested arrays flattened). Other values are not paths.
func (x *evalCtx) paths(g *gate, v any, out *outside) {
	switch t := v.(type) {
	case string:
		if p, known := normalisePath(t, x.root); !known {
			out.add(t)
		} else if !x.inWorkspace(g, p) {
			out.add(p)
		}
	case []any:
		for _, e := range t {
			x.paths(g, e, out)
		}
	case []string:
		for _, e := range t {
			x.paths(g, e, out)
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
		x.paths(g, v, out)
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
