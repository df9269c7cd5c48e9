package proxy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/secrets"
	"github.com/mcpwarden/mcpwarden/rules"
)

// resultMask takes the place of a credential redacted from a result.
const resultMask = "[redacted]"

// What comes back (docs/design.md, "Deciding a request"): a tool result or a resource's contents
// is scanned for credentials with the detector audit redaction uses
// (internal/secrets) before the client can see any of it, and the
// policy's `results:` action applies: redact, deny (ask, until results
// can be put to a human), or log. Every string of the result is scanned
// as the client will decode it — content text, structured content,
// embedded resource text, _meta, member names — so an upstream cannot
// hide a token behind JSON escapes.

// A resultScan is what a scan found in one result.
type resultScan struct {
	kinds []secrets.Kind // the kinds of credential found, sorted, each once
}

// found reports whether the scan found a credential.
func (r resultScan) found() bool { return len(r.kinds) > 0 }

// add records the kinds of ms.
func (r *resultScan) add(ms []secrets.Match) {
	for _, m := range ms {
		if i, ok := slices.BinarySearch(r.kinds, m.Kind); !ok {
			r.kinds = slices.Insert(r.kinds, i, m.Kind)
		}
	}
}

// detail is what the result's audit event says was found and done: the
// kinds of credential, never the credential.
func (r resultScan) detail(a rules.ResultAction) string {
	done := "redacted"
	switch a {
	case rules.ResultDeny, rules.ResultAsk:
		done = "withheld"
	case rules.ResultLog:
		done = "passed on"
	}
	return fmt.Sprintf("result credentials: %s (%s, results: %s)", strings.Join(r.names(), ", "), done, a)
}

// withheld is the error text the client gets for a result withheld.
func (r resultScan) withheld(canonical string, a rules.ResultAction) string {
	return fmt.Sprintf("mcpwarden withheld the result of %s: it held credentials (%s) and the policy says results: %s.",
		canonical, strings.Join(r.names(), ", "), a)
}

func (r resultScan) names() []string {
	names := make([]string, len(r.kinds))
	for i, k := range r.kinds {
		names[i] = k.String()
	}
	return names
}

// scanJSON scans every string of raw, a valid JSON value, for credentials.
// With redact it returns raw with each string that holds one replaced by
// the string redacted (raw itself when none does); otherwise raw as it is.
func scanJSON(raw []byte, redact bool) ([]byte, resultScan) {
	var scan resultScan
	var out []byte
	done := 0 // raw[:done] is in out, when out is in use
	for i := 0; i < len(raw); i++ {
		if raw[i] != '"' {
			continue
		}
		j, escaped := i+1, false
		for j < len(raw) && raw[j] != '"' {
			if raw[j] == '\\' {
				escaped = true
				j++
			}
			j++
		}
		if j >= len(raw) {
			break // not valid JSON; the decoding that follows says so
		}
		lit := raw[i : j+1]
		var text string
		if !escaped {
			// Read in place: the text is not kept past this iteration
			// unless a credential is found, and then only a redacted copy.
			text = unsafe.String(unsafe.SliceData(lit[1:]), len(lit)-2)
		} else if json.Unmarshal(lit, &text) != nil {
			i = j
			continue
		}
		if ms := secrets.Find(text); len(ms) > 0 {
			scan.add(ms)
			if redact {
				enc, err := json.Marshal(secrets.Redact(text, resultMask))
				if err == nil {
					out = append(append(out, raw[done:i]...), enc...)
					done = j + 1
				}
			}
		}
		i = j
	}
	if out == nil {
		return raw, scan
	}
	return append(out, raw[done:]...), scan
}

// scanResource scans the text of res's contents, redacting it in place
// when redact is set. Blob contents are not scanned.
func scanResource(res *mcp.ReadResourceResult, redact bool) resultScan {
	var scan resultScan
	for i, content := range res.Contents {
		c, ok := content.(mcp.TextResourceContents)
		if !ok {
			continue
		}
		ms := secrets.Find(c.Text)
		if len(ms) == 0 {
			continue
		}
		scan.add(ms)
		if redact {
			c.Text = secrets.Redact(c.Text, resultMask)
			res.Contents[i] = c
		}
	}
	return scan
}

// errText is the text of err, an upstream's failure, as the client gets
// it: an error message can carry a credential as a result can, so it is
// redacted unless the policy says results: log.
func errText(err error, a rules.ResultAction) string {
	if a == rules.ResultLog {
		return err.Error()
	}
	return secrets.Redact(err.Error(), resultMask)
}
