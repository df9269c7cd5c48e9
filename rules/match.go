package rules

import "strings"

// A witnessKind says what a condition was tested against.
type witnessKind uint8

const (
	wValue       witnessKind = iota // a scalar's text
	wAbsent                         // the key is absent (or a parent is not an object)
	wNotScalar                      // an object or a value of another type
	wUnknownPath                    // a path-like value whose location is unknown
	wEmpty                          // an empty array
	wShellSyntax                    // a command with control syntax an allow's pattern lacks
	wBadURL                         // a URL-like value that does not parse
)

// A witness is the value that decided a condition, kept for reasons and
// explanations.
type witness struct {
	text     string
	isString bool
	kind     witnessKind
}

// condState accumulates one condition over the values at its key. For a deny
// or ask rule (all false) the condition holds if any value satisfies it; for
// an allow rule only if every value does and there is at least one. An absent
// key counts as one value that satisfies only `!=`.
type condState struct {
	all  bool
	n    int  // values visited
	done bool // any: one satisfied; all: one failed
	w    witness
}

// maxWitnesses bounds the conditions a Reason names.
const maxWitnesses = 8

// matchRule reports whether r matches the call, and the Reason to give if it
// decides. Only a deny or ask rule with conditions builds a Reason (naming the
// values that matched); every other Reason is precomputed.
func (x *evalCtx) matchRule(g *gate, r *rule) (bool, string) {
	if !r.matchesName(x.server, x.tool) {
		if x.tr != nil {
			x.tr.rule(g, r, false, "mcp:"+x.server+":"+x.tool+" does not match mcp:"+r.server.lit+":"+r.tool.lit)
		}
		return false, ""
	}
	all := r.list == ListAllow
	var ws [maxWitnesses]witness
	for i := range r.conds {
		c := &r.conds[i]
		ok, w := x.holds(c, all)
		if i < len(ws) {
			ws[i] = w
		}
		if !ok {
			if x.tr != nil {
				x.tr.rule(g, r, false, describe(c, w, false, all))
			}
			return false, ""
		}
	}
	reason := r.reason
	if len(r.conds) > 0 && !all {
		var b strings.Builder
		b.WriteString(r.reason)
		for i := range min(len(r.conds), len(ws)) {
			b.WriteString(" ")
			if i > 0 {
				b.WriteString("and ")
			}
			b.WriteString(ws[i].describe(r.conds[i].key))
		}
		reason = b.String()
	}
	if x.tr != nil {
		why := "the tool matches and there are no conditions"
		if len(r.conds) > 0 {
			parts := make([]string, len(r.conds))
			for i := range r.conds {
				w := witness{kind: wValue, text: "…"}
				if i < len(ws) {
					w = ws[i]
				}
				parts[i] = describe(&r.conds[i], w, true, all)
			}
			why = strings.Join(parts, "; ")
		}
		x.tr.rule(g, r, true, why)
	}
	return true, reason
}

// holds evaluates one condition over the call's arguments or facts.
func (x *evalCtx) holds(c *cond, all bool) (bool, witness) {
	st := condState{all: all}
	switch c.fact {
	case factNone:
		segs := c.segs
		if c.urlPart != urlNone {
			segs = segs[:len(segs)-1]
		}
		x.resolve(c, x.args, segs, &st)
	case factPath:
		x.eachPath(x.args, func(v any) bool { return x.leaf(c, v, &st) })
		if st.n == 0 {
			st.visit(witness{kind: wAbsent}, c.op == opNe)
		} else if st.done && !all {
			st.w = x.firstPathWitness(c)
		}
	case factLabel:
		// The labels armed in the session, as one multi-valued key: none
		// armed is an absent key.
		anyOf(c, &st, x.armed, func(a Arming) bool { return x.text(c, a.Label, true, &st) })
	default:
		if s, ok := x.factText(c.fact); ok {
			st.visit(witness{text: s, isString: c.fact == factPrincipal || c.fact == factProfile}, c.holds(s))
		} else {
			st.visit(witness{kind: wAbsent}, c.op == opNe)
		}
	}
	if st.n == 0 {
		st.w = witness{kind: wEmpty}
	}
	if all {
		return st.n > 0 && !st.done, st.w
	}
	return st.done, st.w
}

// firstPathWitness returns, of the values at @path that satisfy c, the
// witness with the smallest text: path-like keys are found in map order,
// and a Reason must not depend on it.
func (x *evalCtx) firstPathWitness(c *cond) witness {
	var best witness
	found := false
	x.eachPath(x.args, func(v any) bool {
		st := condState{}
		if x.leaf(c, v, &st) && (!found || st.w.text < best.text) {
			best, found = st.w, true
		}
		return false
	})
	return best
}

// resolve walks v along segs. Arrays are transparent at every step (with or
// without `[]` in the key): each element is walked in turn. It reports
// whether the condition's outcome is settled.
func (x *evalCtx) resolve(c *cond, v any, segs []string, st *condState) bool {
	if len(segs) == 0 {
		return x.leaf(c, v, st)
	}
	switch t := v.(type) {
	case map[string]any:
		child, ok := lookup(t, segs[0])
		if !ok {
			return st.visit(witness{kind: wAbsent}, c.op == opNe)
		}
		return x.resolve(c, child, segs[1:], st)
	case []any:
		return anyOf(c, st, t, func(e any) bool { return x.resolve(c, e, segs, st) })
	}
	return st.visit(witness{kind: wAbsent}, c.op == opNe)
}

// leaf tests the value at the condition's key; an array's elements are each
// tested, nested arrays flattened. An empty array counts as an absent key:
// a server may read it as "no value" and fall back to a default.
func (x *evalCtx) leaf(c *cond, v any, st *condState) bool {
	switch t := v.(type) {
	case []any:
		return anyOf(c, st, t, func(e any) bool { return x.leaf(c, e, st) })
	case []string:
		return anyOf(c, st, t, func(e string) bool { return x.text(c, e, true, st) })
	}
	text, isString, ok := scalarText(v)
	if !ok {
		return st.visit(witness{kind: wNotScalar}, c.op == opNe)
	}
	return x.text(c, text, isString, st)
}

// anyOf tests the elements of a list in turn until one settles the
// condition; an empty list counts as an absent key.
func anyOf[T any](c *cond, st *condState, list []T, test func(T) bool) bool {
	if len(list) == 0 {
		return st.visit(witness{kind: wAbsent}, c.op == opNe)
	}
	for _, e := range list {
		if test(e) {
			return true
		}
	}
	return false
}

// text tests one scalar's text. A string on a path-like key is tested in
// each of its forms (pathEnv.forms), each a value of its own: a deny or ask
// holds if any form satisfies it, an allow only if every form does, and a
// guess (a location that cannot be known) never satisfies an allow. A URL
// part is tested as urlValue reads it, a command as allowCommand reads it.
func (x *evalCtx) text(c *cond, s string, isString bool, st *condState) bool {
	switch {
	case c.urlPart != urlNone || c.urlWhole:
		return x.urlText(c, s, isString, st)
	case c.command && st.all && isString && !allowCommand(c.pattern, s):
		return st.visit(witness{text: s, isString: true, kind: wShellSyntax}, false)
	case !c.pathLike || !isString:
		return st.visit(witness{text: s, isString: isString}, c.holds(s))
	}
	return x.env.forms(s, func(form string, known bool) bool {
		if !known {
			w := witness{text: s, isString: true, kind: wUnknownPath}
			return st.visit(w, !st.all && c.holds(x.env.foldPath(form)))
		}
		return st.visit(witness{text: form, isString: true}, c.holds(x.env.foldPath(form)))
	})
}

// visit records one tested value and reports whether the outcome is settled.
func (st *condState) visit(w witness, ok bool) bool {
	st.n++
	if st.all {
		if !ok {
			st.done, st.w = true, w
			return true
		}
		if st.n == 1 {
			st.w = w
		}
		return false
	}
	if ok {
		st.done, st.w = true, w
		return true
	}
	st.w = w
	return false
}

// describe returns e.g. `path="/etc/passwd"` for a Reason.
func (w witness) describe(key string) string {
	switch w.kind {
	case wAbsent:
		return key + " absent"
	case wNotScalar:
		return key + " not a scalar"
	case wEmpty:
		return key + " empty"
	case wUnknownPath:
		return key + "=" + quote(w.text) + " (location unknown)"
	case wBadURL:
		return key + " of " + quote(w.text) + " (not a URL)"
	case wShellSyntax:
		return key + "=" + quote(w.text) + " (shell control syntax)"
	}
	if w.isString {
		return key + "=" + quote(w.text)
	}
	return key + "=" + truncate(w.text)
}

// describe explains a condition's outcome for Explain.
func describe(c *cond, w witness, ok, all bool) string {
	var why string
	switch w.kind {
	case wAbsent:
		why = c.key + " is absent"
	case wNotScalar:
		why = c.key + " is an object or not a JSON value"
	case wEmpty:
		why = c.key + " is an empty array"
	case wUnknownPath:
		why = c.key + "=" + quote(w.text) + " is relative with no server root, or starts with ~ or a URI scheme"
		if all && !ok {
			why += ", which never satisfies an allow"
		}
	case wShellSyntax:
		why = c.key + "=" + quote(w.text) + " (shell control syntax the pattern lacks: ; & | ` $( > < or a line break)"
	case wBadURL:
		why = c.key + " of " + quote(w.text) + " (not a URL: it satisfies every deny and ask, no allow)"
	default:
		why = w.describe(c.key)
	}
	verb := " does not satisfy "
	if ok {
		verb = " satisfies "
	}
	scope := ""
	if all {
		scope = " (an allow needs every value to)"
	}
	return why + verb + c.key + c.op.String() + c.pattern + scope
}
