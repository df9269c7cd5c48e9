package proxy

import (
	"cmp"
	"fmt"
	"log/slog"

	"github.com/mcpwarden/mcpwarden/rules"
)

// logRefusal tells the operator, in the human log, that a call was
// refused, why, and what in the config would change it: the advice the
// model is not given.
func (c *call) logRefusal(logger *slog.Logger) {
	logger.Info("call refused", "tool", c.tool.Canonical, "rule", c.verdict.Rule, "gate", c.verdict.Gate,
		"reason", cmp.Or(c.reason, c.verdict.Reason), "to_allow", howToAllow(c), "check", fmt.Sprintf("mcpwarden check --config FILE %s '{…}'", c.tool.Canonical))
}

// howToAllow says what in the config would let such a call through, for
// the operator.
func howToAllow(c *call) string {
	switch {
	case c.argsErr != nil:
		return "nothing in the config: the client must send well-formed arguments of the types the tool's inputSchema declares (" + c.argsErr.Error() + ")"
	case c.verdict.Rule == rules.RuleSelfProtection:
		return "nothing: mcpwarden's own files are off limits to servers on this machine"
	case c.verdict.Gate == rules.GateFlow:
		return fmt.Sprintf("answer the ask (elicitation, ask.approvals: local, ask.resolver), start a new session, or narrow the labels of %q; ask_fallback does not settle a flow rule", c.verdict.Rule)
	case c.verdict.Decision == rules.Ask:
		return fmt.Sprintf("answer the ask (elicitation, ask.approvals: local, ask.resolver), narrow the ask rule %q in %s, or set %s.ask_fallback: allow", c.verdict.Rule, c.verdict.Gate, c.verdict.Gate)
	case c.verdict.Rule == rules.RuleDefault || c.verdict.Rule == "":
		return fmt.Sprintf("add %q to policy.allow (or servers.%s.policy.allow)", c.tool.Canonical, c.tool.Server)
	case c.verdict.Rule == rules.RuleOutsideWorkspace:
		return fmt.Sprintf("widen %s.workspace or add an allow rule with a path condition", c.verdict.Gate)
	}
	return fmt.Sprintf("remove or narrow the deny rule %q in %s", c.verdict.Rule, c.verdict.Gate)
}
