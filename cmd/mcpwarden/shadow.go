package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/mcpwarden/mcpwarden/rules"
)

// shadowScope is where shadow mode is on under p, for a report's JSON:
// nil when it is off everywhere, so that the key is left out.
func shadowScope(p *rules.Policy) *rules.ShadowScope {
	if sc := p.Shadowing(); sc.On() {
		return &sc
	}
	return nil
}

// printShadow says where shadow mode is on, one line, when it is.
func printShadow(w io.Writer, sc *rules.ShadowScope) {
	if sc == nil {
		return
	}
	var where []string
	if len(sc.Servers) > 0 {
		where = append(where, "servers "+strings.Join(sc.Servers, ", "))
	}
	if len(sc.Profiles) > 0 {
		where = append(where, "profiles "+strings.Join(sc.Profiles, ", "))
	}
	fmt.Fprintf(w, "shadow mode: on for %s (enforce: shadow): what the policy would ask about or deny is audited and forwarded, nobody asked\n", strings.Join(where, "; "))
}

// shadowDecision is how a table shows decision, the policy's, of a
// request that shadow mode (shadow) may let through: "allow (shadow: would
// deny)" for a would-be ask or deny, else decision as it is.
func shadowDecision(decision string, shadow bool) string {
	if !shadow || decision == rules.Allow.String() {
		return decision
	}
	return "allow (shadow: would " + decision + ")"
}
