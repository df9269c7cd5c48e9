// Package suggest proposes the narrowest allow rules that cover the
// requests an audit log recorded and a policy does not already allow by a
// rule of its own: paths generalised to their narrowest common folder
// inside the server's workspace (a path outside it is named exactly and
// flagged), URLs to their scheme and host, commands and connections
// exactly. It never proposes to allow what a deny rule or a person
// refused, and it checks every rule it proposes by deciding the recorded
// requests again with the rules added, through the caller's decider (the
// same code the proxy decides with). It does no I/O.
package suggest

import (
	"cmp"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/mcpwarden/mcpwarden/internal/recorded"
	"github.com/mcpwarden/mcpwarden/rules"
)

// A Decider decides a request as the proxy would, with the config's
// policy (app.Setup.Decide).
type Decider func(rules.Call) rules.Verdict

// A Policy is the config suggestions are made for. All fields are
// required.
type Policy struct {
	// Rules is the compiled policy: its key classes, workspaces and path
	// forms shape the rules suggested.
	Rules *rules.Policy
	// Servers are the names of the config's servers; a request of
	// another server is not suggested.
	Servers []string
	// Decide decides with the config as it is.
	Decide Decider
	// With decides with the config whose global policy.allow has the
	// rules allow added; an error means a rule does not load.
	With func(allow []string) (Decider, error)
}

// MaxExamples is how many distinct requests are shown for a rule or a
// group of requests not suggested.
const MaxExamples = 5

// An Example is one distinct request and how often it was recorded.
type Example struct {
	Request string `json:"request"` // mcp:<server>:<tool> {arguments}
	Count   int    `json:"count"`
	Where   string `json:"where"` // where it was first recorded: file:line
}

// A Rule is one suggested allow rule with the requests that justify it.
type Rule struct {
	Rule  string    `json:"rule"`
	Count int       `json:"count"` // the requests it covers
	Calls []Example `json:"calls"` // the first MaxExamples distinct ones, most frequent first
	// OutsideWorkspace are the paths it names that are outside the
	// server's workspace (or of a server without one): named exactly,
	// never generalised, for a closer look.
	OutsideWorkspace []string `json:"outside_workspace,omitempty"`
	// Narrowed says why its paths are named exactly when their folder
	// would have been suggested: the folder covers a refused request.
	Narrowed string `json:"narrowed,omitempty"`
}

// A Skipped group is recorded requests that no rule was suggested for,
// and why.
type Skipped struct {
	Why   string    `json:"why"`
	Count int       `json:"count"`
	Calls []Example `json:"calls"`
}

// A Result is what Suggest proposes.
type Result struct {
	Read         int       `json:"read"`            // decision events read
	Allowed      int       `json:"already_allowed"` // of those, allowed by a rule of the config already
	Allow        []Rule    `json:"allow"`
	NotSuggested []Skipped `json:"not_suggested"`
}

// Rules returns the text of every suggested rule.
func (r *Result) Rules() []string {
	var out []string
	for _, x := range r.Allow {
		out = append(out, x.Rule)
	}
	return out
}

// a group is the requests one rule is suggested for.
type group struct {
	shapes []shape
	reqs   []recorded.Request
	exact  string // why every path is named exactly: the generalised rule allowed a refused request
}

// Suggest proposes rules for reqs under p; see the package documentation.
// Its error is a rule that does not load, which is a bug.
func Suggest(reqs []recorded.Request, p Policy) (Result, error) {
	res := Result{Read: len(reqs)}
	skipped := map[string][]recorded.Request{}
	var refused []recorded.Request // to check no suggested rule allows
	groups := map[string]*group{}
	var order []string
	place := placer{p.Rules}
	for _, r := range reqs {
		why, allowed := classify(r, p)
		if allowed {
			res.Allowed++
			continue
		}
		if why != "" {
			skipped[why] = append(skipped[why], r)
			refused = append(refused, r)
			continue
		}
		s, why := shapeOf(p.Rules, r.Call)
		if why != "" {
			skipped[why] = append(skipped[why], r)
			continue
		}
		k := s.key(place)
		g := groups[k]
		if g == nil {
			g = &group{}
			groups[k] = g
			order = append(order, k)
		}
		g.shapes = append(g.shapes, s)
		g.reqs = append(g.reqs, r)
	}
	// Decide everything again with the rules added: a rule that would
	// allow a refused request is narrowed to exact paths, then dropped; a
	// rule that would not allow its requests is dropped.
	for changed := true; changed; {
		changed = false
		texts := map[string]string{}
		suggested := map[string]bool{}
		for _, k := range order {
			texts[k], _ = groups[k].rule(place)
			suggested[texts[k]] = true
		}
		decide, err := p.With(slices.Sorted(maps.Keys(suggested)))
		if err != nil {
			return Result{}, fmt.Errorf("the suggested rules do not load (a bug; please report it): %w", err)
		}
		widens := map[string]recorded.Request{} // rule text → a refused request it allows
		for _, r := range refused {
			if v := decide(r.Call); v.Decision == rules.Allow && suggested[v.Rule] {
				if _, seen := widens[v.Rule]; !seen {
					widens[v.Rule] = r
				}
			}
		}
		for _, k := range slices.Clone(order) {
			g := groups[k]
			why := ""
			if r, bad := widens[texts[k]]; bad {
				if g.exact == "" {
					g.exact = fmt.Sprintf("named exactly: %s would also allow %s, which was refused", texts[k], r.String())
					changed = true
					continue
				}
				why = fmt.Sprintf("its rule %s would also allow %s, which was refused; not suggested", texts[k], r.String())
			} else {
				for _, r := range g.reqs {
					if len(r.Redacted) > 0 {
						continue // decided on the marker, not on what was sent
					}
					if v := decide(r.Call); v.Decision != rules.Allow {
						why = fmt.Sprintf("the rule %s would not allow it (%s by %s); not suggested", texts[k], v.Decision, cmp.Or(v.Rule, v.Gate))
						if (v.Rule == rules.RuleDefault || v.Rule == rules.RuleOutsideWorkspace) && strings.HasPrefix(v.Gate, "servers.") {
							// A server's own default and workspace fence
							// outrank a global allow.
							why = fmt.Sprintf("the rule %s would not allow it under policy: %s's %s (%s) decides it; add the rule to %s.allow instead", texts[k], v.Gate, v.Rule, v.Decision, v.Gate)
						}
						break
					}
				}
			}
			if why != "" {
				skipped[why] = append(skipped[why], g.reqs...)
				order = slices.DeleteFunc(order, func(x string) bool { return x == k })
				changed = true
			}
		}
	}
	for _, k := range order {
		g := groups[k]
		text, outside := g.rule(place)
		calls, n := examples(g.reqs)
		res.Allow = append(res.Allow, Rule{Rule: text, Count: n, Calls: calls, OutsideWorkspace: outside, Narrowed: g.exact})
	}
	slices.SortFunc(res.Allow, func(a, b Rule) int { return strings.Compare(a.Rule, b.Rule) })
	for _, why := range slices.Sorted(maps.Keys(skipped)) {
		calls, n := examples(skipped[why])
		res.NotSuggested = append(res.NotSuggested, Skipped{Why: why, Count: n, Calls: calls})
	}
	return res, nil
}

// The beginnings of reasons a request is not suggested.
const (
	whyDenyRule = "refused by a deny rule"
	whyPerson   = "refused by a person when asked"
	whyRedacted = "recorded with a redacted value"
)

// classify says why no rule should be suggested for r, or that the
// config allows it by a rule already; "" and false leave it to shapeOf.
func classify(r recorded.Request, p Policy) (why string, allowed bool) {
	switch {
	case !slices.Contains(p.Servers, r.Call.Server):
		return fmt.Sprintf("the config has no server %q; not suggested", r.Call.Server), false
	case r.Decision == "deny" && isRule(r.Rule):
		return fmt.Sprintf("%s (%s); not suggested", whyDenyRule, r.Rule), false
	case r.RefusedByPerson():
		return whyPerson + "; not suggested", false
	case r.Decision == "deny" && r.Error != "":
		return "refused before any rule (malformed or mistyped arguments); not suggested", false
	case r.ArmedBy != "":
		return fmt.Sprintf("%s by a flow rule, after an earlier request of its session (no allow rule overrides it); not suggested", r.Decision), false
	}
	v := p.Decide(r.Call)
	switch {
	case v.Decision == rules.Deny && isRule(v.Rule):
		return fmt.Sprintf("%s (%s); not suggested", whyDenyRule, v.Rule), false
	case v.Decision == rules.Allow && v.Rule != rules.RuleDefault:
		return "", true
	case strings.HasPrefix(v.Gate, "profiles."):
		return fmt.Sprintf("%s by %s (%s): a rule under policy cannot widen a profile; not suggested", v.Decision, v.Gate, v.Rule), false
	case v.Decision == rules.Ask && isRule(v.Rule):
		return fmt.Sprintf("asked by the ask rule %s, which no allow rule overrides; not suggested", v.Rule), false
	case v.Decision == rules.Deny && v.Rule == "" && v.Gate != "":
		// A refusal of mcpwarden's own, no rule's: the egress proxy's of
		// a special address, which its reason says how to lift. Naming
		// such an address is the reviewer's call, not a suggestion.
		return fmt.Sprintf("refused by the %s: %s; not suggested", v.Gate, v.Reason), false
	case v.Decision == rules.Deny && v.Rule != rules.RuleDefault && v.Rule != rules.RuleOutsideWorkspace:
		return fmt.Sprintf("refused by %s, which no rule allows; not suggested", cmp.Or(v.Rule, v.Gate)), false
	}
	return "", false
}

// isRule reports whether a verdict's rule is a rule of the config, not a
// built-in name.
func isRule(s string) bool { return strings.HasPrefix(s, "mcp:") }

// A placer says where a path form of a server's request is: the deepest
// directory of the server's workspace holding it ("in:<dir>"), or, for a
// path outside it, the path itself ("out:<path>"). A server without a
// workspace has its root as one; without either every path is outside.
type placer struct{ p *rules.Policy }

func (pl placer) of(server, form string) string {
	dirs, root := pl.p.Workspace(server)
	if len(dirs) == 0 && root != "" {
		dirs = []string{root}
	}
	best := ""
	for _, d := range dirs {
		if pl.p.WithinFold(form, d) && len(d) > len(best) {
			best = d
		}
	}
	if best == "" {
		return "out:" + form
	}
	return "in:" + best
}

// rule is the text of g's rule, with the paths it names outside the
// workspace. The paths of one value (its forms), the paths outside the
// workspace, and every path when g.exact says why, are named exactly; the paths of
// several values in one workspace directory, as their narrowest common
// folder in it.
func (g *group) rule(place placer) (text string, outside []string) {
	s := g.shapes[0]
	text = rules.Canonical(s.server, literalName(s.tool))
	for _, k := range slices.Sorted(maps.Keys(s.fixed)) {
		var vals []string
		for _, x := range g.shapes {
			vals = append(vals, x.fixed[k]...)
		}
		var pats []string
		for _, v := range sortedSet(vals) {
			pats = append(pats, literal(v))
		}
		text += ":" + k + "=" + anyOf(pats)
	}
	for _, k := range slices.Sorted(maps.Keys(s.paths)) {
		forms, values := map[string][]string{}, map[string][]string{} // by place
		for _, x := range g.shapes {
			for _, f := range x.paths[k] {
				pl := place.of(s.server, f.form)
				forms[pl] = append(forms[pl], f.form)
				values[pl] = append(values[pl], f.value)
			}
		}
		var pats []string
		for _, pl := range slices.Sorted(maps.Keys(forms)) {
			fs := sortedSet(forms[pl])
			dir, inside := strings.CutPrefix(pl, "in:")
			if !inside {
				outside = append(outside, fs...)
			}
			if !inside || g.exact != "" || len(sortedSet(values[pl])) == 1 {
				for _, f := range fs {
					pats = append(pats, literal(f))
				}
				continue
			}
			common := commonDir(fs)
			if !place.p.WithinFold(common, dir) {
				common = dir // paths compared case-folded: spelt otherwise, they part above dir
			}
			pats = append(pats, folderGlob(common))
		}
		text += ":" + k + "=" + anyOf(sortedSet(pats))
	}
	return text, sortedSet(outside)
}

// commonDir is the deepest directory that holds every one of paths
// (clean and absolute), or is one of them.
func commonDir(paths []string) string {
	common := strings.Split(paths[0], "/")
	for _, p := range paths[1:] {
		segs := strings.Split(p, "/")
		n := 0
		for n < len(common) && n < len(segs) && common[n] == segs[n] {
			n++
		}
		common = common[:n]
	}
	return path.Clean("/" + strings.Join(common, "/"))
}

// folderGlob is the pattern of dir and everything under it.
func folderGlob(dir string) string {
	if dir == "/" {
		return "/**"
	}
	return literal(dir) + "/**"
}

// examples are the distinct requests of reqs, most frequent first (then
// first recorded first), at most MaxExamples, and how many reqs there are.
func examples(reqs []recorded.Request) ([]Example, int) {
	var out []Example
	at := map[string]int{}
	for _, r := range reqs {
		t := r.String()
		if i, ok := at[t]; ok {
			out[i].Count++
			continue
		}
		at[t] = len(out)
		out = append(out, Example{Request: t, Count: 1, Where: r.Where})
	}
	slices.SortStableFunc(out, func(a, b Example) int { return cmp.Compare(b.Count, a.Count) })
	return out[:min(len(out), MaxExamples)], len(reqs)
}
