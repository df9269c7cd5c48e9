package main

import (
	"encoding/json"
	"io"

	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/rules"
)

// checkReport is what check --json prints: the decision and its reasons,
// as the text output gives them, and the config's warnings.
type checkReport struct {
	Decision  string           `json:"decision"`
	Call      string           `json:"call"`
	Arguments map[string]any   `json:"arguments"`
	Profile   string           `json:"profile,omitempty"`
	After     []string         `json:"after,omitempty"`
	Rule      string           `json:"rule,omitempty"`
	Gate      string           `json:"gate,omitempty"`
	Reason    string           `json:"reason,omitempty"`
	Steps     []checkStep      `json:"steps"`
	Warnings  []config.Warning `json:"warnings"`

	// Shadow is set when shadow mode (enforce: shadow) would forward the
	// request although Decision is ask or deny.
	Shadow bool `json:"shadow,omitempty"`
}

// checkStep is one rule considered.
type checkStep struct {
	Where   string `json:"where"`
	Rule    string `json:"rule"`
	Matched bool   `json:"matched"`
	Why     string `json:"why,omitempty"`
}

// printCheckJSON writes the explanation of c as one JSON object.
func printCheckJSON(w io.Writer, c rules.Call, ex rules.Explanation, shadow bool, warnings []config.Warning) error {
	v := ex.Verdict
	rep := checkReport{
		Decision: v.Decision.String(), Call: "mcp:" + c.Server + ":" + c.Tool, Arguments: c.Arguments,
		Profile: c.Profile, Rule: v.Rule, Gate: v.Gate, Reason: v.Reason, Shadow: shadow,
		Steps: []checkStep{}, Warnings: warnings,
	}
	if rep.Warnings == nil {
		rep.Warnings = []config.Warning{}
	}
	if rep.Arguments == nil {
		rep.Arguments = map[string]any{}
	}
	for _, a := range c.Armed {
		rep.After = append(rep.After, a.Label)
	}
	for _, s := range ex.Steps {
		where := s.Where
		if where == "" {
			where = s.Gate + " " + s.List.String()
		}
		rep.Steps = append(rep.Steps, checkStep{Where: where, Rule: s.Rule, Matched: s.Matched, Why: s.Why})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}
