package main

import (
	"encoding/json"
	"io"
	"strings"

	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/rules"
)

// validateReport is what validate --json prints: what the text output
// says, as one JSON object.
type validateReport struct {
	Config string `json:"config"`
	// Valid is whether the config loaded; it may still have findings and
	// servers that failed to start.
	Valid   bool `json:"valid"`
	Offline bool `json:"offline"`
	Servers int  `json:"servers"`
	Tools   int  `json:"tools"`
	// Errors are the config's errors (Valid false), or the servers'
	// failures to start.
	Errors []string `json:"errors"`
	// Warnings are the sandbox's, which are no findings.
	Warnings []string `json:"warnings"`
	// Findings are the lint's: the config's and the policy's against the
	// tools listed; --strict fails on any.
	Findings  []validateFinding `json:"findings"`
	Sandboxes map[string]string `json:"sandboxes,omitempty"`
	// Shadow says where shadow mode (enforce: shadow) is on; left out
	// when it is off.
	Shadow *rules.ShadowScope `json:"shadow,omitempty"`
}

// validateFinding is one lint finding: where (a key, or a tool), where in
// the file when known, the rule it is about if any, and what to do.
type validateFinding struct {
	Where   string `json:"where"`
	Place   string `json:"place,omitempty"`
	Rule    string `json:"rule,omitempty"`
	Message string `json:"message"`
}

func newValidateReport(path string, offline bool) *validateReport {
	return &validateReport{Config: path, Offline: offline, Errors: []string{}, Warnings: []string{}, Findings: []validateFinding{}}
}

// addLint adds the config's warnings as findings.
func (r *validateReport) addLint(ws []config.Warning) {
	for _, w := range ws {
		r.Findings = append(r.Findings, validateFinding{Where: w.Key, Place: w.Place, Message: w.Message})
	}
}

// addFindings adds the policy lint's findings.
func (r *validateReport) addFindings(fs []rules.Finding) {
	for _, f := range fs {
		r.Findings = append(r.Findings, validateFinding{Where: f.Where, Rule: f.Rule, Message: f.Message})
	}
}

// invalid records err, the config's load error, one problem a line.
func (r *validateReport) invalid(err error) {
	r.Errors = append(r.Errors, strings.Split(strings.TrimPrefix(err.Error(), "mcpwarden: "), "\n")...)
}

func (r *validateReport) write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
