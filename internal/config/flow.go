package config

import "github.com/mcpwarden/mcpwarden/rules"

// A SessionPolicy is the top-level keys of session-aware policy
// (docs/design.md, "Deciding a request"): labels, which name sets of requests by rule patterns,
// flow, whose rules escalate a request by what its session has already
// received, limits, which count requests per window, and results, what becomes of a result that holds a
// credential. All are compiled with the rules (rules.Spec.Labels and Flow),
// so an error names its key (`labels.egress[1]`, `flow[0].then`).
type SessionPolicy struct {
	// Labels maps a label name to rule patterns: a request carries the
	// label if any pattern matches it.
	Labels map[string][]string `koanf:"labels"`
	// Flow are the flow rules, e.g. {after: untrusted_input, then: ask,
	// on: egress}: once a request labelled after has returned a result in
	// a session, a later request of the session labelled on is decided at
	// least then (ask or deny).
	Flow []rules.FlowSpec `koanf:"flow"`
	// Limits count requests per window, e.g. {match: "mcp:mail:send_*",
	// max: 20, per: principal, window: 1h, then: ask}: a request beyond max
	// in a window is decided at least then. Counted in memory, or in the
	// shared state when one is configured.
	Limits []rules.LimitSpec `koanf:"limits"`
	// Results is what to do with a tool result or resource contents that
	// hold a credential (a private key, a cloud or VCS token, a JWT, …):
	// redact (the default), deny, ask (held while a human is asked;
	// withheld without an answer) or log. A server's own results key
	// overrides it.
	Results string `koanf:"results"`
	// HideSuspiciousTools hides the tools whose definition, at any depth
	// of its schemas, looks aimed at the model (instructions such as
	// "ignore previous …", hidden Unicode), and the prompts and resources
	// that read the same way; validate and tools flag the tools anyway.
	HideSuspiciousTools bool `koanf:"hide_suspicious_tools"`
}
