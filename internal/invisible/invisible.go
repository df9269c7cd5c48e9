// Package invisible is the one list of the characters that show nothing
// where they stand yet are still read by whatever takes the text in (a
// model, a terminal, a phrase search): argview shows each as an escape to
// the human who approves a call, and toolscreen flags each in the
// definitions a model reads and takes them out before it looks for
// phrases. One list, so that no character can be hidden from one and not
// the other.
package invisible

import "unicode"

// Is reports whether r shows nothing: a format character (Unicode Cf:
// bidirectional controls U+202A–202E, U+2066–2069, U+200E/F, U+061C;
// zero-width characters U+200B–200D, U+2060–2064, U+FEFF; the soft hyphen,
// the Mongolian vowel separator, interlinear annotation marks), a tag
// character (U+E0000–E007F, assigned or not), a variation selector, or one
// of the printable characters that show nothing: the combining grapheme
// joiner, the Hangul and Khmer fillers and the Mongolian free variation
// selectors. Control characters and white space are not in it: a line
// break shows.
func Is(r rune) bool {
	switch {
	case unicode.Is(unicode.Cf, r):
		return true
	case r >= 0xE0000 && r <= 0xE007F: // tags
		return true
	case VariationSelector(r):
		return true
	case r >= 0x180B && r <= 0x180F: // Mongolian selectors and vowel separator
		return true
	case r == 0x034F, r == 0x115F, r == 0x1160, r == 0x17B4, r == 0x17B5, r == 0x3164, r == 0xFFA0:
		return true
	}
	return false
}

// VariationSelector reports whether r is a variation selector (U+FE00 to
// U+FE0F, U+E0100 to U+E01EF): it picks how the character before it is
// drawn and shows nothing itself, so between letters it is a way to write
// bytes into a word.
func VariationSelector(r rune) bool {
	return r >= 0xFE00 && r <= 0xFE0F || r >= 0xE0100 && r <= 0xE01EF
}
