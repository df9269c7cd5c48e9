package argview

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mcpwarden/mcpwarden/internal/secrets"
)

// A span is a part of a string the secret scanner found a credential in,
// with the kinds found there.
type span struct {
	start, end int
	kinds      []string
}

// credentials returns the credentials in s as the secret scanner finds
// them (secrets.Find, the detection result scanning uses), sorted and
// with overlapping matches merged.
func credentials(s string) []span {
	found := secrets.Find(s)
	if len(found) == 0 {
		return nil
	}
	slices.SortFunc(found, func(a, b secrets.Match) int { return cmp.Compare(a.Start, b.Start) })
	var out []span
	for _, m := range found {
		if n := len(out); n > 0 && m.Start <= out[n-1].end {
			last := &out[n-1]
			last.end = max(last.end, m.End)
			if k := m.Kind.String(); !slices.Contains(last.kinds, k) {
				last.kinds = append(last.kinds, k)
			}
			continue
		}
		out = append(out, span{start: m.Start, end: m.End, kinds: []string{m.Kind.String()}})
	}
	return out
}

// marker is what stands for the credential s[sp.start:sp.end]: its kind
// and length, never any of it.
func (sp span) marker(s string) string {
	return fmt.Sprintf("<hidden: %s, %d characters>", strings.Join(sp.kinds, "/"), utf8.RuneCountInString(s[sp.start:sp.end]))
}

// hideCredentials is s quoted, with each credential in it replaced by its
// marker outside the quotes: `"Bearer " + <hidden: auth_header, 40
// characters>`.
func hideCredentials(s string) string {
	spans := credentials(s)
	if spans == nil {
		return Quote(s)
	}
	var parts []string
	at := 0
	for _, sp := range spans {
		if sp.start > at {
			parts = append(parts, Quote(s[at:sp.start]))
		}
		parts = append(parts, sp.marker(s))
		at = sp.end
	}
	if at < len(s) {
		parts = append(parts, Quote(s[at:]))
	}
	return strings.Join(parts, " + ")
}

// Hide returns a copy of args for resolvers and the page's JSON with each
// credential in a string replaced by its marker (see Value), except under
// path-like keys (pathKey, which may be nil). Values are otherwise as
// they will be forwarded.
func Hide(args map[string]any, pathKey func(string) bool) map[string]any {
	out, _ := hide(args, false, pathKey).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	return out
}

func hide(v any, pathLike bool, pathKey func(string) bool) any {
	switch t := v.(type) {
	case string:
		if pathLike {
			return t
		}
		spans := credentials(t)
		if spans == nil {
			return t
		}
		var b strings.Builder
		at := 0
		for _, sp := range spans {
			b.WriteString(t[at:sp.start])
			b.WriteString(sp.marker(t))
			at = sp.end
		}
		b.WriteString(t[at:])
		return b.String()
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = hide(e, pathLike || (pathKey != nil && pathKey(k)), pathKey)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = hide(e, pathLike, pathKey)
		}
		return out
	}
	return v
}
