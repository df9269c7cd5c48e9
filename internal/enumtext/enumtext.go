// Package enumtext is the text of mcpwarden's small enums (a decision, an
// answer, a result action): one table of names indexed by value, read the
// same way by String, MarshalText and parsing, so that an unknown value is
// never written and an unknown name never read.
package enumtext

import (
	"fmt"
	"slices"
)

// Names are the names of an enum's values, indexed by value. Declare them
// keyed by the constants, {Deny: "deny", Allow: "allow"}, so that reordering
// the constants cannot pair a value with another's name.
type Names[E ~uint8] []string

// String returns e's name, or typ(N) (e.g. "Decision(9)") for a value that
// has none.
func (n Names[E]) String(e E, typ string) string {
	if int(e) < len(n) {
		return n[e]
	}
	return fmt.Sprintf("%s(%d)", typ, uint8(e))
}

// Marshal returns e's name, or an error naming what (e.g. "decision") for a
// value that has none.
func (n Names[E]) Marshal(e E, what string) ([]byte, error) {
	if int(e) >= len(n) {
		return nil, fmt.Errorf("invalid %s %d", what, uint8(e))
	}
	return []byte(n[e]), nil
}

// Lookup returns the value named s (exactly: names are case-sensitive) and
// true, or the zero value and false when no value is named s.
func (n Names[E]) Lookup(s string) (E, bool) {
	i := slices.Index(n, s)
	if i < 0 {
		return 0, false
	}
	return E(i), true
}

// Set sets *dst to the value named s and reports whether there is one; when
// there is none, *dst becomes the zero value (for mcpwarden's enums, the one
// that fails closed).
func (n Names[E]) Set(dst *E, s string) bool {
	v, ok := n.Lookup(s)
	*dst = v
	return ok
}
