package rules

import (
	"strconv"

	"github.com/mcpwarden/mcpwarden/internal/enumtext"
	"github.com/mcpwarden/mcpwarden/internal/textcut"
)

// An Explanation is a Verdict with the steps that led to it.
type Explanation struct {
	Verdict Verdict
	Steps   []Step
}

// A List names where a Step comes from: one of a gate's rule lists, its
// workspace fence or its default. Its text is the list's key in the
// config ("deny", "ask", "allow") or "workspace" or "default".
type List uint8

// The lists of a Step. The rule lists come in the order of the
// decisions they give, so that ListOf is a conversion.
const (
	ListDeny List = iota
	ListAsk
	ListAllow
	ListWorkspace
	ListDefault
)

var listNames = enumtext.Names[List]{ListDeny: "deny", ListAsk: "ask", ListAllow: "allow", ListWorkspace: "workspace", ListDefault: "default"}

// ListOf returns the rule list whose rules give d.
func ListOf(d Decision) List {
	if d > Allow {
		return ListDeny // not a decision: name the list that refuses
	}
	return List(d)
}

// String returns the list's text, or "List(N)" for an invalid list.
func (l List) String() string { return listNames.String(l, "List") }

// MarshalText returns the list's text; an invalid list is an error.
func (l List) MarshalText() ([]byte, error) { return listNames.Marshal(l, "rule list") }

// A Step is one rule (or workspace check, or default) that was considered.
type Step struct {
	Gate    string // "policy", "servers.fs.policy", "profiles.ci"
	List    List
	Rule    string // the rule text, RuleOutsideWorkspace or RuleDefault
	Where   string // e.g. "policy.allow[3]"; "" for workspace and default steps
	Matched bool
	Why     string
}

// A trace collects Steps; a nil *trace (Decide's) records nothing.
type trace struct {
	steps []Step
}

func (t *trace) add(s Step) {
	if t != nil {
		t.steps = append(t.steps, s)
	}
}

func (t *trace) rule(g *gate, r *rule, matched bool, why string) {
	t.add(Step{Gate: g.name, List: r.list, Rule: r.text, Where: r.where, Matched: matched, Why: why})
}

// maxShown bounds the characters of a value quoted in a Reason, so that a
// long or secret value is not copied whole into logs.
const maxShown = 64

func truncate(s string) string {
	// Keep the end: a path's file name, not its first directories, is what
	// tells the reader which file it was.
	return textcut.Tail(s, maxShown+1)
}

func quote(s string) string {
	return strconv.Quote(truncate(s))
}
