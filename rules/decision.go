package rules

import (
	"fmt"

	"github.com/mcpwarden/mcpwarden/internal/enumtext"
)

// A Decision is the outcome of evaluating a call. The zero value is Deny, so a
// forgotten assignment fails closed. Decisions are ordered from the most
// restrictive (Deny) to the least (Allow); combining verdicts keeps the
// smallest.
type Decision uint8

// The decisions, most restrictive first.
const (
	Deny Decision = iota
	Ask
	Allow
)

var decisionNames = enumtext.Names[Decision]{Deny: "deny", Ask: "ask", Allow: "allow"}

// String returns "deny", "ask" or "allow", or "Decision(N)" for a value that
// is none of them.
func (d Decision) String() string { return decisionNames.String(d, "Decision") }

// MarshalText returns the decision's name; it fails for an unknown value.
func (d Decision) MarshalText() ([]byte, error) { return decisionNames.Marshal(d, "decision") }

// UnmarshalText accepts exactly "deny", "ask" or "allow" and rejects anything
// else with an error that names the value.
func (d *Decision) UnmarshalText(b []byte) error {
	v, err := ParseDecision(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// ParseDecision returns the decision named s: "deny", "ask" or "allow"
// (lower case, as written in config). Anything else is an error naming s.
func ParseDecision(s string) (Decision, error) {
	if d, ok := decisionNames.Lookup(s); ok {
		return d, nil
	}
	return Deny, fmt.Errorf("unknown decision %q: want deny, ask or allow", s)
}
