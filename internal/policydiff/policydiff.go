// Package policydiff replays recorded requests through two policies and
// says which decisions change: grouped by the rule that decides under the
// new policy, the changes that widen (a request the old policy asked
// about or denied that the new one allows) first. policy diff prints it;
// a reload under --watch warns with it and records its counts. Both
// policies decide through the caller's decider, the code the proxy
// decides with; policydiff itself decides nothing.
package policydiff

import (
	"cmp"
	"slices"

	"github.com/mcpwarden/mcpwarden/internal/recorded"
	"github.com/mcpwarden/mcpwarden/rules"
)

// A Decider decides a request as the proxy would (app.Setup.Decide).
type Decider func(rules.Call) rules.Verdict

// A Policy is one side of a replay: how it decides a request, and the
// flow labels a request carries under it (rules.Policy.Labels; nil for
// none).
type Policy struct {
	Decide Decider
	Labels func(rules.Call) []string
}

// Decisions decides reqs under p in order, each as in its session: its
// call armed with the labels (under p) of the earlier requests of the
// session that p lets through, as the proxy arms them once a request is
// forwarded. A request p asks about is taken as forwarded if it was
// forwarded when recorded.
func Decisions(reqs []recorded.Request, p Policy) []rules.Verdict {
	out := make([]rules.Verdict, len(reqs))
	armed := map[string][]rules.Arming{} // session → labels armed in it
	for i, r := range reqs {
		c := r.Call
		if r.Session != "" {
			c.Armed = armed[r.Session]
		}
		v := p.Decide(c)
		out[i] = v
		forwarded := v.Decision == rules.Allow || v.Decision == rules.Ask && r.Forwarded()
		if p.Labels == nil || r.Session == "" || !forwarded {
			continue
		}
		for _, l := range p.Labels(r.Call) {
			if !slices.ContainsFunc(armed[r.Session], func(a rules.Arming) bool { return a.Label == l }) {
				armed[r.Session] = append(armed[r.Session], rules.Arming{Label: l, ID: r.ID, Tool: r.Canonical()})
			}
		}
	}
	return out
}

// MaxExamples is how many requests a Group shows.
const MaxExamples = 3

// A From is one way a group's requests were decided by the old policy.
type From struct {
	Decision rules.Decision `json:"decision"`
	Rule     string         `json:"rule"`
	Count    int            `json:"count"`
}

// An Example is one changed request.
type Example struct {
	Request string `json:"request"` // mcp:<server>:<tool> {arguments}
	Old     string `json:"old"`     // decision (rule)
	New     string `json:"new"`
	Where   string `json:"where"` // file:line it was recorded at
	// Redacted are the keys whose recorded value was redacted: the
	// request was decided on the redaction marker, not what was sent.
	Redacted []string `json:"redacted,omitempty"`
}

// A Group is the changed requests that one rule decides under the new
// policy, with one decision.
type Group struct {
	Decision rules.Decision `json:"decision"` // under the new policy
	Rule     string         `json:"rule"`     // the rule (or built-in name) that decides under the new policy
	Gate     string         `json:"gate,omitempty"`
	Widened  bool           `json:"widened"` // the new policy allows what the old one asked about or denied
	Count    int            `json:"count"`
	From     []From         `json:"from"`     // how the old policy decided them, most frequent first
	Examples []Example      `json:"examples"` // the first MaxExamples distinct requests
}

// A Result is the decisions that change between two policies.
type Result struct {
	Replayed int     `json:"replayed"`
	Changed  int     `json:"changed"`
	Widened  int     `json:"widened"`
	Groups   []Group `json:"groups"` // widening groups first, then the larger first
}

// Replay decides every request of reqs under old and under new (see
// Decisions) and returns the decisions that differ. A request whose
// deciding rule changes but whose decision does not is not a change.
func Replay(reqs []recorded.Request, old, new Policy) Result {
	res := Result{Replayed: len(reqs)}
	type key struct {
		decision   rules.Decision
		rule, gate string
		widened    bool
	}
	groups := map[key]*Group{}
	var order []key
	olds, news := Decisions(reqs, old), Decisions(reqs, new)
	for i, r := range reqs {
		o, n := olds[i], news[i]
		if o.Decision == n.Decision {
			continue
		}
		widened := n.Decision == rules.Allow
		res.Changed++
		if widened {
			res.Widened++
		}
		k := key{n.Decision, n.Rule, n.Gate, widened}
		g := groups[k]
		if g == nil {
			g = &Group{Decision: n.Decision, Rule: n.Rule, Gate: n.Gate, Widened: widened}
			groups[k] = g
			order = append(order, k)
		}
		g.Count++
		if i := slices.IndexFunc(g.From, func(f From) bool { return f.Decision == o.Decision && f.Rule == o.Rule }); i >= 0 {
			g.From[i].Count++
		} else {
			g.From = append(g.From, From{Decision: o.Decision, Rule: o.Rule, Count: 1})
		}
		if len(g.Examples) < MaxExamples && !slices.ContainsFunc(g.Examples, func(e Example) bool { return e.Request == r.String() }) {
			g.Examples = append(g.Examples, Example{Request: r.String(), Old: verdictText(o), New: verdictText(n), Where: r.Where, Redacted: r.Redacted})
		}
	}
	for _, k := range order {
		g := groups[k]
		slices.SortStableFunc(g.From, func(a, b From) int { return cmp.Compare(b.Count, a.Count) })
		res.Groups = append(res.Groups, *g)
	}
	slices.SortStableFunc(res.Groups, func(a, b Group) int {
		if a.Widened != b.Widened {
			if a.Widened {
				return -1
			}
			return 1
		}
		return cmp.Compare(b.Count, a.Count)
	})
	return res
}

// verdictText is v's decision and what made it: "deny (default)".
func verdictText(v rules.Verdict) string {
	return v.Decision.String() + " (" + cmp.Or(v.Rule, v.Gate) + ")"
}
