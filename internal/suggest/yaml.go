package suggest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// WriteYAML writes r as a config fragment to paste under the config's
// policy key: an allow list whose every rule is preceded by comments
// naming the requests that justify it, then, as comments, what was not
// suggested and why.
func (r *Result) WriteYAML(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# mcpwarden policy suggest: %d decisions read, %d already allowed by the config's rules.\n", r.Read, r.Allowed)
	b.WriteString("# Review every rule, then add them to the allow list under policy: in the config.\n")
	if len(r.Allow) == 0 {
		b.WriteString("# Nothing to suggest.\nallow: []\n")
	} else {
		b.WriteString("allow:\n")
	}
	for _, x := range r.Allow {
		fmt.Fprintf(&b, "  # %s:\n", counted(x.Count, x.Calls))
		for _, c := range x.Calls {
			fmt.Fprintf(&b, "  #   %d× %s  (%s)\n", c.Count, comment(c.Request), comment(c.Where))
		}
		if x.Narrowed != "" {
			fmt.Fprintf(&b, "  # %s\n", comment(x.Narrowed))
		}
		for _, p := range x.OutsideWorkspace {
			fmt.Fprintf(&b, "  # OUTSIDE THE WORKSPACE, named exactly, not generalised: %s\n", comment(p))
		}
		fmt.Fprintf(&b, "  - %s\n", quote(x.Rule))
	}
	if len(r.NotSuggested) > 0 {
		b.WriteString("\n# Not suggested:\n")
	}
	for _, s := range r.NotSuggested {
		fmt.Fprintf(&b, "#\n# %s — %s:\n", comment(s.Why), counted(s.Count, s.Calls))
		for _, c := range s.Calls {
			fmt.Fprintf(&b, "#   %d× %s  (%s)\n", c.Count, comment(c.Request), comment(c.Where))
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// counted says how many requests there are and how many distinct ones
// are shown.
func counted(n int, calls []Example) string {
	s := fmt.Sprintf("%d requests", n)
	if n == 1 {
		s = "1 request"
	}
	if len(calls) < n {
		s += fmt.Sprintf(", the %d most frequent shown", len(calls))
	}
	return s
}

// comment is s on one line, fit for a YAML comment.
func comment(s string) string {
	return strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(s)
}

// quote is s as a YAML double-quoted scalar (a JSON string is one).
func quote(s string) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	_ = e.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}
