package proxy

import (
	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/telemetry"
	"github.com/mcpwarden/mcpwarden/proxy/connect"
	"github.com/mcpwarden/mcpwarden/proxy/scan"
	"github.com/mcpwarden/mcpwarden/rules"
)

// Shadow mode (docs/design.md, "Shadow mode"). Under `enforce: shadow`
// a request the policy decided is recorded with the decision it would have
// had (shadow: true), and one it would have asked about or denied is
// forwarded as allowed, nobody asked. What the policy decides is shadowed:
// its rules and defaults, the workspace fence, the profile's gate (and
// with it profiles.<name>.servers), the flow rules, the limits'
// escalations and sampling: deny, for every request kind; results: deny
// and ask become redact (resultAction). What mcpwarden
// refuses on its own stays refused: malformed or mistyped arguments,
// self-protection, a changed tool definition not yet accepted (the pins),
// and, outside the decision, unknown tools, size limits, the sandbox and
// the egress proxy's refusal of special addresses.

// shadowed applies shadow mode to c, whose verdict is set: when the
// policy decided it and c's server and profile are in shadow mode, c is
// marked (its decision event carries shadow: true), and if the verdict is
// an ask or a deny it is settled as let through by shadow mode and
// counted in tel, and shadowed reports true: the caller forwards it
// without asking anyone.
func (c *call) shadowed(tel *telemetry.Telemetry) bool {
	if c.argsErr != nil || builtinVerdict(c.verdict) || c.policy.Enforcement(c.tool.Server, c.profile) != rules.EnforceShadow {
		return false
	}
	c.shadow = true
	if c.verdict.Decision == rules.Allow {
		return false
	}
	c.grantedBy, c.outcome = audit.GrantedByShadow, audit.OutcomeAllowed
	c.reason = "shadow mode: forwarded; it would have been " + shadowWould(c.verdict.Decision)
	if c.verdict.Reason != "" {
		c.reason += ": " + c.verdict.Reason
	}
	tel.ShadowDecision(c.tool.Server, c.verdict.Decision)
	return true
}

// builtinVerdict reports whether v is one of mcpwarden's own refusals
// rather than the policy's: self-protection, a changed tool definition or
// the egress proxy's refusal of an address.
func builtinVerdict(v rules.Verdict) bool {
	return v.Gate == rules.GateBuiltin || v.Gate == gatePin || v.Gate == connect.Gate
}

// shadowWould names what a verdict would have done: "denied" or "asked
// about".
func shadowWould(d rules.Decision) string {
	if d == rules.Ask {
		return "asked about"
	}
	return "denied"
}

// resultAction is what becomes of c's result when it holds a credential:
// the policy's results setting, except that in shadow mode a result the
// policy would withhold (deny) or ask about (ask) is redacted, as by
// default: shadow mode asks nobody and withholds nothing, and passes on no
// credential either.
func (c *call) resultAction() rules.ResultAction {
	a := c.policy.Results(c.tool.Server)
	if c.shadow && (a == rules.ResultDeny || a == rules.ResultAsk) {
		return rules.ResultRedact
	}
	return a
}

// resultDetail is the result event's detail for the credentials found in
// c's result, done by action (resultAction): in shadow mode it also says
// what the policy's own setting would have done.
func (c *call) resultDetail(found scan.Findings, action rules.ResultAction) string {
	d := found.Detail(action)
	switch would := c.policy.Results(c.tool.Server); {
	case would == action:
	case would == rules.ResultAsk:
		d += "; shadow mode: results: ask would have asked about it"
	default:
		d += "; shadow mode: results: " + would.String() + " would have withheld it"
	}
	return d
}
