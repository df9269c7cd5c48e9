package rules

import "path/filepath"

// A Call is one tools/call as the rules see it.
type Call struct {
	// Profile is the client profile whose gate applies ("" = none). An
	// unknown profile denies the call (fail closed).
	Profile string
	Server  string
	// Tool is the upstream tool name; the canonical name is mcp:<Server>:<Tool>.
	Tool string
	// Arguments are the decoded JSON arguments, with or without UseNumber.
	Arguments map[string]any
	// Roots are the client's MCP roots as absolute local directories, used by
	// a gate with workspace_from_roots.
	Roots []string
	// Principal is who the client authenticated as (`@principal`; "" =
	// absent).
	Principal string
	// Facts are the tool's annotations from its pinned definition
	// (`@readOnly` …); the zero value has none.
	Facts Facts
	// UpstreamRoots are the directories the server was handed as MCP roots
	// (the answers to its roots/list), absolute and local. A server such as
	// server-filesystem replaces its directories with them and resolves a
	// relative path against them, so a relative value is read against each
	// too, as against ServerSpec.ExtraRoots; relative entries are ignored.
	// nil = none.
	UpstreamRoots []string
	// Physical maps a raw reading of a path-like value (PathForm.Raw) to the
	// path it resolves to on disk, symlinks followed as the kernel follows
	// them; the proxy fills it for servers on this machine, and every rule
	// then also sees that physical form. nil = none.
	Physical map[string]string
	// Armed are the labels armed in the call's session (see FlowSpec),
	// with the calls that armed them; nil = none, and then the flow rules
	// cost nothing.
	Armed []Arming
}

// The names a Verdict's Rule has when no rule of a list decided: a gate's
// default, or its workspace fence (see also RuleSelfProtection). No rule
// text can take either name: every rule starts with "mcp:".
const (
	RuleDefault          = "default"
	RuleOutsideWorkspace = "outside_workspace"
)

// A Verdict is the decision for a call and what decided it.
type Verdict struct {
	Decision Decision
	// Rule is the deciding rule's text, or RuleDefault,
	// RuleOutsideWorkspace or RuleSelfProtection.
	Rule string
	// Gate is the deciding gate: "policy", "servers.fs.policy", "profiles.ci".
	Gate string
	// Reason is one short sentence for people, e.g.
	// `deny rule "mcp:fs:write_file:path=/etc/**" matched path="/etc/passwd"`.
	Reason string
	// ArmedBy is, for a verdict a flow rule decided, the id of the call
	// whose result armed it (Arming.ID); else "".
	ArmedBy string
}

// Decide evaluates a call against every applicable gate: the global policy,
// the server's policy and the profile's. Within a gate deny beats
// outside_workspace=deny, which beats ask, which beats outside_workspace=ask,
// which beats allow, whatever the order of rules; a gate contributes the
// verdict of its most restrictive match, or its explicit Default, or abstains.
// The decision is the most restrictive contribution of the global and server
// gates, or the global Default if both abstain; a profile's contribution can
// then only make it more restrictive. Decide does not allocate for a call
// that is allowed, asked or denied by default or by a rule without
// conditions, unless a path value needs cleaning or joining to the server's
// root or a number outside 0..99 is matched; a deny or ask by a rule with
// conditions builds a Reason naming the values.
func (p *Policy) Decide(c Call) Verdict {
	return p.decide(&c, nil)
}

// Explain is Decide with a record of every rule that was considered, whether
// it matched and why. It shares Decide's code path, so its verdict is always
// Decide's.
func (p *Policy) Explain(c Call) Explanation {
	tr := &trace{}
	v := p.decide(&c, tr)
	return Explanation{Verdict: v, Steps: tr.steps}
}

// SHA256 returns the hex SHA-256 of a canonical serialisation of the spec the
// policy was compiled from, for the audit log's policy_sha256; "" for nil.
func (p *Policy) SHA256() string {
	if p == nil {
		return ""
	}
	return p.sha
}

// A contribution is one gate's verdict; a zero one (ok false) abstains.
type contribution struct {
	ok bool
	v  Verdict
}

// join keeps the more restrictive of two contributions, the earlier one on a
// tie.
func join(a, b contribution) contribution {
	if !a.ok || b.ok && b.v.Decision < a.v.Decision {
		return b
	}
	return a
}

// evalCtx carries one evaluation; it lives on Decide's stack.
// It holds the call's fields by value: a pointer to the Call would make
// escape analysis move every Call to the heap.
type evalCtx struct {
	p            *Policy
	server, tool string
	args         map[string]any
	roots        []string
	principal    string
	profile      string
	facts        Facts
	armed        []Arming // Call.Armed, which @label reads
	env          pathEnv
	tr           *trace // nil for Decide
}

func (p *Policy) decide(c *Call, tr *trace) Verdict {
	if p == nil {
		v := Verdict{Decision: Deny, Rule: RuleDefault, Reason: "no policy is loaded"}
		tr.add(Step{Gate: "", List: ListDefault, Rule: RuleDefault, Matched: true, Why: v.Reason})
		return v
	}
	srv := p.servers[c.Server]
	var prof *gate
	if c.Profile != "" {
		if prof = p.profiles[c.Profile]; prof == nil {
			v := Verdict{Decision: Deny, Rule: RuleDefault, Gate: "profiles." + c.Profile, Reason: "unknown profile " + quote(c.Profile) + " is denied everything"}
			tr.add(Step{Gate: v.Gate, List: ListDefault, Rule: RuleDefault, Matched: true, Why: v.Reason})
			return v
		}
	}
	x := p.evalCtx(c, srv)
	x.tr = tr
	if v, ok := x.selfProtection(srv); ok {
		tr.add(Step{Gate: v.Gate, List: ListDeny, Rule: v.Rule, Matched: true, Why: v.Reason})
		return v
	}

	res := x.gate(&p.global)
	if srv.gate != nil && (tr != nil || !res.ok || res.v.Decision != Deny) {
		res = join(res, x.gate(srv.gate))
	}
	if !res.ok {
		res = contribution{true, Verdict{Decision: p.globalDefault, Rule: RuleDefault, Gate: GatePolicy, Reason: p.defaultReason}}
		tr.add(Step{Gate: GatePolicy, List: ListDefault, Rule: RuleDefault, Matched: true, Why: p.defaultReason})
	}
	if prof != nil && (tr != nil || res.v.Decision != Deny) {
		res = join(res, x.gate(prof))
	}
	if len(p.flow) > 0 && (len(c.Armed) > 0 || tr != nil) && (tr != nil || res.v.Decision != Deny) {
		res.v = x.flow(c.Armed, res.v)
	}
	return res.v
}

// evalCtx returns the context evaluating c, whose server is srv.
func (p *Policy) evalCtx(c *Call, srv serverEntry) evalCtx {
	return evalCtx{
		p: p, server: c.Server, tool: c.Tool, args: c.Arguments, roots: c.Roots,
		principal: c.Principal, profile: c.Profile, facts: c.Facts, armed: c.Armed,
		env: pathEnv{root: srv.root, extra: srv.extra, handed: c.UpstreamRoots, home: srv.home, physical: c.Physical, fold: p.foldPaths},
	}
}

// gate evaluates one gate; see Decide for the precedence.
func (x *evalCtx) gate(g *gate) contribution {
	deny, denyWhy, _ := x.scan(g, ListDeny, nil)
	if deny != nil && x.tr == nil {
		return contribution{true, Verdict{Decision: Deny, Rule: deny.text, Gate: g.name, Reason: denyWhy}}
	}
	ask, askWhy, _ := x.scan(g, ListAsk, nil)
	var out outside
	if g.confined {
		x.outside(g, &out)
	}
	allow, _, covers := x.scan(g, ListAllow, &out)
	fenced := out.n > 0 && !covers
	if out.n > 0 && x.tr != nil {
		why := out.reason(g)
		if covers {
			why += "; overridden by allow rule " + quote(allow.text) + ", which has a condition on every such path"
		}
		x.tr.add(Step{Gate: g.name, List: ListWorkspace, Rule: RuleOutsideWorkspace, Matched: fenced, Why: why})
	}

	switch {
	case deny != nil:
		return contribution{true, Verdict{Decision: Deny, Rule: deny.text, Gate: g.name, Reason: denyWhy}}
	case fenced && g.outside == Deny:
		return contribution{true, Verdict{Decision: Deny, Rule: RuleOutsideWorkspace, Gate: g.name, Reason: out.reason(g)}}
	case ask != nil:
		return contribution{true, Verdict{Decision: Ask, Rule: ask.text, Gate: g.name, Reason: askWhy}}
	case fenced:
		return contribution{true, Verdict{Decision: Ask, Rule: RuleOutsideWorkspace, Gate: g.name, Reason: out.reason(g)}}
	case allow != nil:
		return contribution{true, Verdict{Decision: Allow, Rule: allow.text, Gate: g.name, Reason: allow.reason}}
	case g.hasDef:
		x.tr.add(Step{Gate: g.name, List: ListDefault, Rule: RuleDefault, Matched: true, Why: g.defReason})
		return contribution{true, Verdict{Decision: g.def, Rule: RuleDefault, Gate: g.name, Reason: g.defReason}}
	}
	return contribution{}
}

// scan returns the first rule of a list, in list order, that matches the
// call, and the Reason naming it. For the allow list with paths outside the
// workspace (out.n > 0) it prefers the first matching rule that covers all of
// them. Without a trace it stops as soon as the answer is known.
func (x *evalCtx) scan(g *gate, kind List, out *outside) (r *rule, why string, covers bool) {
	l := &g.lists[kind]
	a, b, c := l.candidates(x.server, x.tool)
	fenced := out != nil && out.n > 0
	var first, cover *rule
	var firstWhy, coverWhy string
	for len(a)+len(b)+len(c) > 0 {
		r := l.rules[popMin(&a, &b, &c)]
		ok, why := x.matchRule(g, r)
		if !ok {
			continue
		}
		if first == nil {
			first, firstWhy = r, why
		}
		if fenced && cover == nil && r.coversAll(x, g, out) {
			cover, coverWhy = r, why
		}
		if x.tr == nil && (!fenced || cover != nil) {
			break
		}
	}
	if cover != nil {
		return cover, coverWhy, true
	}
	return first, firstWhy, false
}

// popMin removes and returns the smallest head of three sorted slices, at
// least one of which is not empty.
func popMin(a, b, c *[]int32) int32 {
	m := a
	if len(*m) == 0 || len(*b) > 0 && (*b)[0] < (*m)[0] {
		m = b
	}
	if len(*m) == 0 || len(*c) > 0 && (*c)[0] < (*m)[0] {
		m = c
	}
	i := (*m)[0]
	*m = (*m)[1:]
	return i
}

// cleanRoot returns a client root as a clean absolute directory; ok is false
// for a relative one, which is ignored.
func cleanRoot(r string) (string, bool) {
	if !filepath.IsAbs(r) {
		return "", false
	}
	return filepath.Clean(r), true
}
