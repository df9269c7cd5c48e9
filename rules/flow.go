package rules

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// GateFlow is the Gate of a Verdict a flow rule decided.
const GateFlow = "flow"

// maxLabels bounds the labels of a Spec.
const maxLabels = 64

// A FlowSpec is one flow rule as written in config: once a request
// labelled After has returned a result in a session, every later request
// of that session labelled On is decided at least Then ("ask" or "deny"),
// whatever allows it.
type FlowSpec struct {
	After string `koanf:"after"`
	Then  string `koanf:"then"`
	On    string `koanf:"on"`
}

// An Arming records that a label is armed in a session: a request with
// the label returned a result. The caller keeps them (the rules hold no
// state) and hands them back in Call.Armed.
type Arming struct {
	Label string
	// ID is the arming call's id (its audit decision event's id).
	ID string
	// Tool is the arming call's canonical name.
	Tool string
}

// A label is one compiled entry of Spec.Labels: a gate whose deny list
// holds its patterns, so that a request carries the label if any value
// of it matches any pattern, as a deny rule would.
type label struct {
	name string
	g    gate
}

// A flowRule is one compiled FlowSpec.
type flowRule struct {
	text      string // e.g. "flow[0]: after untrusted_input then ask on egress"
	after, on int    // indexes into Policy.labels
	then      Decision
}

// labels compiles Spec.Labels in name order and the flow rules that refer
// to them; every problem names its config key.
func (c *compiler) labels(specs map[string][]string, flow []FlowSpec) {
	if len(specs) > maxLabels {
		c.errorf("labels: %d labels, at most %d", len(specs), maxLabels)
	}
	for _, name := range slices.Sorted(maps.Keys(specs)) {
		where := "labels." + name
		if !ValidServerName(name) {
			c.errorf("labels: %q is not a label name (lower-case letters, digits, _ and -, at most 32)", name)
		}
		if len(specs[name]) == 0 {
			c.errorf("%s: a label needs at least one rule pattern", where)
		}
		l := label{name: name}
		l.g.name = where
		for i, text := range specs[name] {
			at := where + "[" + strconv.Itoa(i) + "]"
			r, err := c.rule(text, ListDeny)
			if err != nil {
				c.errs = append(c.errs, &RuleError{Where: at, Rule: text, Column: column(text, err.off), Msg: err.msg})
				continue
			}
			r.where = at
			r.reason = "label " + name + " pattern " + strconv.Quote(text) + " matched"
			l.g.lists[ListDeny].add(r)
		}
		c.p.labels = append(c.p.labels, l)
	}
	for i, f := range flow {
		where := "flow[" + strconv.Itoa(i) + "]"
		fr := flowRule{text: where + ": after " + f.After + " then " + f.Then + " on " + f.On}
		fr.after = c.labelIndex(where+".after", f.After)
		fr.on = c.labelIndex(where+".on", f.On)
		fr.then = c.escalation(where+".then", f.Then)
		c.p.flow = append(c.p.flow, fr)
	}
}

// escalation compiles the then of a flow rule or limit, which can only
// make a decision more restrictive: ask or deny.
func (c *compiler) escalation(where, then string) Decision {
	switch then {
	case "ask":
		return Ask
	case "deny":
		return Deny
	}
	c.errorf("%s: %q is not ask or deny", where, then)
	return Deny
}

// labelIndex returns the index of the label called name, reporting an
// unknown one at where.
func (c *compiler) labelIndex(where, name string) int {
	i := slices.IndexFunc(c.p.labels, func(l label) bool { return l.name == name })
	if i < 0 {
		c.errorf("%s: %q is not a label defined under labels", where, name)
	}
	return i
}

// HasLabel reports whether the policy defines the label called name.
func (p *Policy) HasLabel(name string) bool {
	return p != nil && slices.ContainsFunc(p.labels, func(l label) bool { return l.name == name })
}

// Labels returns the names of the labels the call carries, in name order,
// or nil when it carries none (then it does not allocate): the caller arms
// them once the call has returned a result. It reads the same arguments and
// path forms as Decide.
func (p *Policy) Labels(c Call) []string {
	if p == nil || len(p.labels) == 0 {
		return nil
	}
	x := p.evalCtx(&c, p.servers[c.Server])
	var out []string
	for i := range p.labels {
		if x.hasLabel(i) {
			out = append(out, p.labels[i].name)
		}
	}
	return out
}

// hasLabel reports whether the call carries label i.
func (x *evalCtx) hasLabel(i int) bool {
	tr := x.tr
	x.tr = nil // an explanation names the flow rule, not each pattern tried
	r, _, _ := x.scan(&x.p.labels[i].g, ListDeny, nil)
	x.tr = tr
	return r != nil
}

// flow escalates v by the flow rules whose After label is armed and whose
// On label the call carries, each to at least its Then: never lower (see
// takesOver). The verdict of an escalation names the flow rule and the
// arming call.
func (x *evalCtx) flow(armed []Arming, v Verdict) Verdict {
	for i := range x.p.flow {
		f := &x.p.flow[i]
		after := x.p.labels[f.after].name
		j := slices.IndexFunc(armed, func(a Arming) bool { return a.Label == after })
		if j < 0 {
			if x.tr != nil {
				x.tr.add(Step{Gate: GateFlow, List: ListOf(f.then), Rule: f.text, Matched: false, Why: after + " is not armed in this session"})
			}
			continue
		}
		if !f.takesOver(v) && x.tr == nil {
			continue // it could change nothing
		}
		on := x.p.labels[f.on].name
		if !x.hasLabel(f.on) {
			if x.tr != nil {
				x.tr.add(Step{Gate: GateFlow, List: ListOf(f.then), Rule: f.text, Matched: false, Why: "the request is not labelled " + on})
			}
			continue
		}
		a := armed[j]
		why := after + " was armed by " + armingName(a) + ", and the request is labelled " + on
		x.tr.add(Step{Gate: GateFlow, List: ListOf(f.then), Rule: f.text, Matched: true, Why: why})
		if f.takesOver(v) {
			v = Verdict{Decision: f.then, Rule: f.text, Gate: GateFlow, ArmedBy: a.ID,
				Reason: "flow rule " + strconv.Quote(f.text) + " matched: " + why}
		}
	}
	return v
}

// takesOver reports whether the flow rule, when it applies, decides
// instead of v: when it is more restrictive, and also when it is as
// restrictive as an ask no flow rule made. The flow rule then names
// itself, so that a session grant given for the other ask rule before the
// label was armed does not settle this one. A deny stays as it is.
func (f *flowRule) takesOver(v Verdict) bool {
	return f.then < v.Decision || f.then == v.Decision && v.Decision == Ask && v.Gate != GateFlow
}

// armingName names an arming call for a Reason.
func armingName(a Arming) string {
	switch {
	case a.Tool != "" && a.ID != "":
		return a.Tool + " (call " + a.ID + ")"
	case a.Tool != "":
		return a.Tool
	case a.ID != "":
		return "call " + a.ID
	}
	return "an earlier call"
}

// UsesLabels reports whether the policy defines labels, so that the proxy
// need only work out a call's labels and keep what its session armed then.
// A nil Policy uses none.
func (p *Policy) UsesLabels() bool {
	return p != nil && len(p.labels) > 0
}

// A labelRef is one `@label` condition as written, for checkLabelRefs.
type labelRef struct {
	rule, pattern string
	literal       bool // a glob without meta characters: one label name
}

// checkLabelRefs refuses an `@label` condition that can never hold for
// want of its label, since a misspelt label would silently stop a deny or
// ask working: any one when the policy defines no labels, and one whose
// pattern is a plain name that no label has.
func (c *compiler) checkLabelRefs() {
	for _, ref := range c.labelRefs {
		switch {
		case len(c.p.labels) == 0:
			c.errorf("rule %q: @label reads the labels armed in the session, and no labels are defined under labels", ref.rule)
		case ref.literal && !c.p.HasLabel(ref.pattern):
			c.errorf("rule %q: @label pattern %q names no label defined under labels (%s)", ref.rule, ref.pattern, strings.Join(c.p.LabelNames(), ", "))
		}
	}
}

// LabelNames returns the names of the policy's labels, in name order. A
// nil Policy has none.
func (p *Policy) LabelNames() []string {
	if p == nil {
		return nil
	}
	names := make([]string, len(p.labels))
	for i, l := range p.labels {
		names[i] = l.name
	}
	return names
}
