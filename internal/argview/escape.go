// Package argview renders a call's arguments for the human who approves
// it: the approval form, the approvals page and the `mcpwarden approvals`
// listing all show the lines Render makes, so no two of them can disagree
// on what a call holds. Every key and string value is JSON-quoted, and
// every character that could move, reorder, hide or overwrite text (line
// breaks, control, bidirectional and invisible characters) is shown as a
// visible escape, so that no argument can add a line to what the human
// reads, or make one line look like another: one argument is always one
// line, followed by one line per form of each path it holds.
package argview

import (
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/mcpwarden/mcpwarden/internal/invisible"
)

const hexDigits = "0123456789abcdef"

// hidden reports whether r must be shown as an escape: anything not
// printable (control, format (Cf), private use, surrogates, unassigned
// code points and every separator but the ASCII space: line and paragraph
// separators, no-break and wide spaces), and every character
// internal/invisible lists, among them the printable ones that show
// nothing: variation selectors, the combining grapheme joiner, Hangul and
// Khmer fillers, Mongolian selectors.
func hidden(r rune) bool {
	return r != ' ' && (!unicode.IsPrint(r) || invisible.Is(r))
}

// Escape returns s with `\` doubled and every character that hidden
// reports written as its JSON escape (`\n`, `\r`, `\t`, `\u202e`; a
// character beyond U+FFFF as its UTF-16 pair, `\udb40\udc41`). The result
// is one line of only visible characters and spaces.
func Escape(s string) string {
	return escape(s, false)
}

// Quote returns s as a JSON string that Escape has made visible: quotes
// around it, `"` inside it escaped. Decoding the result as JSON gives s
// back (invalid UTF-8 aside, which JSON cannot hold).
func Quote(s string) string {
	return `"` + escape(s, true) + `"`
}

// Visible returns s with only the characters hidden reports escaped, `\`
// kept as it is: for text already escaped (the lines of Render) that
// passed through other hands, so that it cannot drive a terminal either.
func Visible(s string) string {
	return escapeHidden(s, false, false)
}

func escape(s string, quoted bool) string {
	return escapeHidden(s, quoted, true)
}

func escapeHidden(s string, quoted, backslash bool) string {
	clean := true
	for _, r := range s {
		if (backslash && r == '\\') || (quoted && r == '"') || hidden(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == '\\' && backslash:
			b.WriteString(`\\`)
		case r == '"' && quoted:
			b.WriteString(`\"`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case !hidden(r):
			b.WriteRune(r)
		case r > 0xFFFF:
			hi, lo := utf16.EncodeRune(r)
			writeU(&b, hi)
			writeU(&b, lo)
		default:
			writeU(&b, r)
		}
	}
	return b.String()
}

func writeU(b *strings.Builder, r rune) {
	b.WriteString(`\u`)
	for shift := 12; shift >= 0; shift -= 4 {
		b.WriteByte(hexDigits[(r>>shift)&0xF])
	}
}
