package proxy

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/proxy/naming"
	"github.com/mcpwarden/mcpwarden/rules"
)

// TestShadowModeLiftsOnlyThePolicysDecisions is the table of docs/design.md,
// "Shadow mode": which verdicts shadow mode lets through, and which of
// mcpwarden's own refusals it never lifts.
func TestShadowModeLiftsOnlyThePolicysDecisions(t *testing.T) {
	t.Parallel()
	p, err := rules.Compile(rules.Spec{
		Enforce:        rules.EnforceShadow,
		Servers:        map[string]rules.ServerSpec{"fs": {}, "git": {Enforce: rules.EnforceEnforce}},
		Profiles:       map[string]rules.PolicySpec{"ci": {}, "ops": {}},
		ProfileEnforce: map[string]rules.Enforce{"ops": rules.EnforceEnforce},
	})
	if err != nil {
		t.Fatal(err)
	}
	deny := func(rule, gate string) rules.Verdict {
		return rules.Verdict{Decision: rules.Deny, Rule: rule, Gate: gate, Reason: "r"}
	}
	tests := []struct {
		name           string
		server, prof   string
		verdict        rules.Verdict
		argsErr        error
		forward, shown bool // let through by shadow mode; marked shadow: true
	}{
		{name: "a deny rule", server: "fs", verdict: deny("mcp:fs:*", rules.GatePolicy), forward: true, shown: true},
		{name: "an ask rule", server: "fs", verdict: rules.Verdict{Decision: rules.Ask, Rule: "mcp:fs:*", Gate: rules.GatePolicy}, forward: true, shown: true},
		{name: "the default", server: "fs", verdict: deny(rules.RuleDefault, rules.GatePolicy), forward: true, shown: true},
		{name: "the workspace fence", server: "fs", verdict: deny(rules.RuleOutsideWorkspace, rules.GatePolicy), forward: true, shown: true},
		{name: "a server gate's deny", server: "fs", verdict: deny("mcp:fs:x", "servers.fs.policy"), forward: true, shown: true},
		{name: "a profile's deny", server: "fs", prof: "ci", verdict: deny("mcp:fs:*", "profiles.ci"), forward: true, shown: true},
		{name: "a flow rule", server: "fs", verdict: rules.Verdict{Decision: rules.Ask, Rule: "flow[0]", Gate: rules.GateFlow, ArmedBy: "x"}, forward: true, shown: true},
		{name: "a limit's escalation", server: "fs", verdict: deny("limits[0]", rules.GateLimit), forward: true, shown: true},
		{name: "sampling: deny", server: "fs", verdict: deny("servers.fs.policy.sampling: deny", "servers.fs.policy"), forward: true, shown: true},
		{name: "an allow is marked and forwarded as ever", server: "fs", verdict: rules.Verdict{Decision: rules.Allow, Rule: "mcp:fs:*", Gate: rules.GatePolicy}, forward: false, shown: true},
		{name: "self-protection", server: "fs", verdict: deny(rules.RuleSelfProtection, rules.GateBuiltin)},
		{name: "a changed tool definition", server: "fs", verdict: deny("on_tool_change: deny", gatePin)},
		{name: "malformed arguments", server: "fs", verdict: rules.Verdict{Decision: rules.Deny, Reason: "duplicate key"}, argsErr: errors.New("duplicate key")},
		{name: "a server with enforce: enforce", server: "git", verdict: deny("mcp:git:*", rules.GatePolicy)},
		{name: "a profile with enforce: enforce", server: "fs", prof: "ops", verdict: deny("mcp:fs:*", rules.GatePolicy)},
		{name: "an unknown profile", server: "fs", prof: "nope", verdict: deny(rules.RuleDefault, "profiles.nope")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &call{tool: naming.Tool{Server: tt.server, Name: "t"}, profile: tt.prof, policy: p, verdict: tt.verdict, argsErr: tt.argsErr, grantedBy: audit.GrantedByRule}
			if got := c.shadowed(nil); got != tt.forward {
				t.Errorf("shadowed = %v, want %v", got, tt.forward)
			}
			if c.shadow != tt.shown {
				t.Errorf("marked shadow %v, want %v", c.shadow, tt.shown)
			}
			wantBy := audit.GrantedByRule
			if tt.forward {
				wantBy = audit.GrantedByShadow
			}
			if c.grantedBy != wantBy || tt.forward != (c.outcome == audit.OutcomeAllowed) {
				t.Errorf("granted_by %q outcome %q, want %q", c.grantedBy, c.outcome, wantBy)
			}
		})
	}
}

// TestShadowModeDoesNotOpenSpecialAddresses: the egress proxy dials a
// loopback, private or metadata address only when an allow rule names
// it; a shadowed deny, or a default that shadow mode lets through, names
// nothing.
func TestShadowModeDoesNotOpenSpecialAddresses(t *testing.T) {
	t.Parallel()
	spec := connectSpec(rules.PolicySpec{Deny: []string{"mcp:fs:network/connect:host=169.254.169.254"}})
	spec.Enforce = rules.EnforceShadow
	e := newCatalogEnv(t, spec, Options{})
	for _, addr := range []string{"169.254.169.254", "127.0.0.1", "10.0.0.1", "::1"} {
		if e.srv.egress.NamesAddress("fs", addr, netip.MustParseAddr(addr), 80) {
			t.Errorf("shadow mode lets the egress proxy dial %s", addr)
		}
	}
}
