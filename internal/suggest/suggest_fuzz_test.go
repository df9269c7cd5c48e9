package suggest

import (
	"path"
	"slices"
	"testing"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/recorded"
	"github.com/mcpwarden/mcpwarden/rules"
)

// FuzzSuggestNeverAllowsOutsideTheWorkspaceBeyondWhatWasRecorded: for any
// two recorded paths, the suggested rules allow both, allow no other path
// outside the workspace /ws, and inside it nothing outside the narrowest
// folder holding both (nothing else at all for one path).
func FuzzSuggestNeverAllowsOutsideTheWorkspaceBeyondWhatWasRecorded(f *testing.F) {
	f.Add("/ws/a/x", "/ws/b/y", "/ws2/z")
	f.Add("/ws/../etc/a", "/etc/b", "/etc/c")
	f.Add("/ws/[a]/*", "/ws/{a,b}/x:c=d", "/w")
	f.Fuzz(func(t *testing.T, a, b, probe string) {
		for _, s := range []string{a, b, probe} {
			for i := 0; i < len(s); i++ {
				if s[i] < 0x20 || s[i] >= 0x7f {
					return // ASCII: one form per path
				}
			}
		}
		a, b, probe = path.Clean("/"+a), path.Clean("/"+b), path.Clean("/"+probe)
		spec := rules.Spec{
			Global:  rules.PolicySpec{Default: "ask", Workspace: []string{"/ws"}},
			Servers: map[string]rules.ServerSpec{"fs": {Root: "/ws"}},
		}
		pol, err := rules.Compile(spec)
		if err != nil {
			t.Fatal(err)
		}
		with := func(allow []string) (Decider, error) {
			s := spec
			s.Global.Allow = allow
			p, err := rules.Compile(s)
			if err != nil {
				return nil, err
			}
			return p.Decide, nil
		}
		call := func(p string) rules.Call {
			return rules.Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": p}}
		}
		var reqs []recorded.Request
		for _, p := range []string{a, b} {
			reqs = append(reqs, recorded.Request{Call: call(p), Decision: audit.DecisionAsk, Rule: rules.RuleDefault, GrantedBy: audit.GrantedByUserOnce, Outcome: audit.OutcomeAllowed})
		}
		res, err := Suggest(reqs, Policy{Rules: pol, Servers: []string{"fs"}, Decide: pol.Decide, With: with})
		if err != nil {
			t.Fatal(err)
		}
		decide, err := with(res.Rules())
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{a, b} {
			if v := decide(call(p)); v.Decision != rules.Allow {
				t.Fatalf("recorded %s is %v under %q; not suggested: %+v", p, v.Decision, res.Rules(), res.NotSuggested)
			}
		}
		// Inside it, nothing beyond the narrowest folder of the two.
		if in := func(p string) bool { return rules.Within(p, "/ws") }; in(a) && in(b) && in(probe) && !slices.Contains([]string{a, b}, probe) {
			if a == b || !rules.Within(probe, commonDir([]string{a, b})) {
				if v := decide(call(probe)); v.Decision == rules.Allow {
					t.Fatalf("%s, outside the narrowest folder of %s and %s, is allowed by %s", probe, a, b, v.Rule)
				}
			}
		}
		if !rules.Within(probe, "/ws") && !slices.Contains([]string{a, b}, probe) {
			if v := decide(call(probe)); v.Decision == rules.Allow {
				t.Fatalf("%s, outside the workspace and not recorded, is allowed by %s (recorded %s and %s)", probe, v.Rule, a, b)
			}
		}
	})
}
