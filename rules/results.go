package rules

import (
	"strings"

	"github.com/mcpwarden/mcpwarden/internal/enumtext"
)

// A ResultAction says what the proxy does with a result (a tool result, a
// resource's contents) that holds a credential (docs/design.md, "Deciding a request").
type ResultAction uint8

// The result actions. The zero value is ResultRedact: a credential in a
// result is replaced before the client sees it, unless the policy says
// otherwise.
const (
	// ResultRedact replaces each credential with a mask.
	ResultRedact ResultAction = iota
	// ResultDeny withholds the whole result; the client gets an error.
	ResultDeny
	// ResultAsk holds the result while a human is asked whether the
	// client may see it (as sent, or with the credentials masked); with
	// no answer it is withheld, as deny does: doubt fails closed.
	ResultAsk
	// ResultLog lets the result through unchanged; the audit says what it
	// held.
	ResultLog
)

var resultActionNames = enumtext.Names[ResultAction]{ResultRedact: "redact", ResultDeny: "deny", ResultAsk: "ask", ResultLog: "log"}

// String returns the action's config name, as in "redact".
func (a ResultAction) String() string { return resultActionNames.String(a, "ResultAction") }

// ParseResultAction parses a `results:` value; "" is ResultRedact.
func ParseResultAction(s string) (ResultAction, bool) {
	if s == "" {
		return ResultRedact, true
	}
	return resultActionNames.Lookup(s)
}

// Results returns what to do with a result of server that holds a
// credential: the server's `results:` if it has one, else the global one.
func (p *Policy) Results(server string) ResultAction {
	if p == nil {
		return ResultRedact
	}
	if a, ok := p.serverResults[server]; ok {
		return a
	}
	return p.results
}

// resultsSpec checks and compiles the `results:` values of s.
func (c *compiler) resultsSpec(s Spec) {
	c.p.results = c.resultAction("results", s.Results)
	for name, srv := range s.Servers {
		if srv.Results == "" {
			continue
		}
		if c.p.serverResults == nil {
			c.p.serverResults = map[string]ResultAction{}
		}
		c.p.serverResults[name] = c.resultAction("servers."+name+".results", srv.Results)
	}
}

func (c *compiler) resultAction(where, s string) ResultAction {
	a, ok := ParseResultAction(s)
	if !ok {
		c.errorf("%s: %q is not a result action (%s)", where, s, strings.Join(resultActionNames[:], ", "))
	}
	return a
}

// HidesSuspiciousTools reports whether tools whose description looks
// aimed at the model are to be hidden (Spec.HideSuspiciousTools).
func (p *Policy) HidesSuspiciousTools() bool {
	return p != nil && p.hideSuspicious
}
