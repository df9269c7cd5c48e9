package app

import (
	"fmt"

	"github.com/mcpwarden/mcpwarden/proxy/connect"
	"github.com/mcpwarden/mcpwarden/proxy/ondisk"
	"github.com/mcpwarden/mcpwarden/rules"
)

// Decide decides call offline the way the running proxy would, with the
// same code, and explains why: relative paths also against the roots
// mcpwarden hands the server, on disk where resolve_symlinks is on, and
// elsewhere self-protection on disk for a server on this machine; an
// outbound connection as the egress proxy would see it. The limits the
// call counts against are added as steps; with overLimit the call is
// taken to be beyond each one's max and the verdict escalated as the proxy
// would escalate it. check, test and policy diff all decide through it.
func (s *Setup) Decide(call rules.Call, overLimit bool) rules.Explanation {
	call.UpstreamRoots, _ = s.Policy.Workspace(call.Server)
	srv, known := s.Config.Servers[call.Server]
	resolve := known && serverOptions(srv).ResolveSymlinks
	if resolve {
		call.Physical = ondisk.PhysicalForms(s.Policy, call)
	}
	ex := s.Policy.Explain(call)
	if !resolve {
		ex.Verdict = ondisk.SelfProtectionOnDisk(s.Policy, &call, ex.Verdict)
	}
	ex = explainLimits(s.Policy, call, ex, overLimit)
	if call.Tool == rules.ToolConnect {
		ex.Verdict = connect.Refuse(s.Policy, call.Server, call.Arguments, ex.Verdict)
	}
	return ex
}

// ShadowForwards reports whether the running proxy would forward call,
// decided v by Decide, only because shadow mode is on for its server and
// profile (enforce: shadow): v is an ask or a deny of the policy, not one
// of mcpwarden's own refusals (self-protection, the egress proxy's
// refusal of an address), which shadow mode never lifts.
func (s *Setup) ShadowForwards(call rules.Call, v rules.Verdict) bool {
	return v.Decision != rules.Allow && v.Gate != rules.GateBuiltin && v.Gate != connect.Gate &&
		s.Policy.Enforcement(call.Server, call.Profile) == rules.EnforceShadow
}

// explainLimits adds to ex a step for each limit the call counts
// against; with over, the call is taken to be beyond each one's max, and
// the verdict is escalated as the proxy would escalate it.
func explainLimits(p *rules.Policy, c rules.Call, ex rules.Explanation, over bool) rules.Explanation {
	for _, l := range p.Limits(c) {
		why := fmt.Sprintf("counts against it; request %d in %v per %v would be %v (--over-limit)", l.Max+1, l.Window, l.Per, l.Then())
		if over {
			why = fmt.Sprintf("taken as request %d in %v per %v (--over-limit)", l.Max+1, l.Window, l.Per)
			ex.Verdict = rules.OverLimit(ex.Verdict, l, l.Max+1)
		}
		ex.Steps = append(ex.Steps, rules.Step{Gate: rules.GateLimit, List: rules.ListOf(l.Then()), Rule: l.Text, Matched: over, Why: why})
	}
	return ex
}
