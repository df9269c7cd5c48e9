// Package keyfold is the one home of argument-key folding: which JSON object
// keys a server may read as the same name. Go servers bind arguments into
// structs with encoding/json, which matches a key to a field name under
// Unicode simple case folding (the SimpleFold orbits strings.EqualFold uses:
// `PATH` binds to Path, `ſource` with U+017F to Source, `Keys` with the
// KELVIN SIGN U+212A to Keys); encoding/json/v2 with case-insensitive
// matching (`case:ignore`, MatchCaseInsensitiveNames) also ignores `_` and
// `-` (`filePath` binds to file_path). Keys are therefore compared under
// that widest folding: case folded by SimpleFold orbit, ASCII `_` and `-`
// ignored.
package keyfold

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Equal reports whether a server may read keys a and b as the same name
// (see the package documentation). It does not allocate.
func Equal(a, b string) bool {
	if a == b {
		return true
	}
	for {
		ra, na := next(a)
		rb, nb := next(b)
		switch {
		case na == 0 || nb == 0:
			return na == nb
		case ra != rb && Rune(ra) != Rune(rb):
			return false
		}
		a, b = a[na:], b[nb:]
	}
}

// Key returns the canonical form of s: two keys are Equal iff their Keys
// are the same.
func Key(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for {
		r, n := next(s)
		if n == 0 {
			return b.String()
		}
		b.WriteRune(Rune(r))
		s = s[n:]
	}
}

// next decodes the first rune of s that is not `_` or `-`, and returns it
// and the bytes up to its end; n is 0 at the end of s.
func next(s string) (r rune, n int) {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r != '_' && r != '-' {
			return r, i
		}
	}
	return 0, 0
}

// Rune returns the smallest rune of r's SimpleFold orbit (the runes
// strings.EqualFold treats as equal to r), as encoding/json does when it
// matches a key to a struct field: `a` and `A` give `A`, `ſ` gives `S`, the
// KELVIN SIGN gives `K`, and `İ`, alone in its orbit, gives itself.
func Rune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' {
			r -= 'a' - 'A'
		}
		return r
	}
	for {
		f := unicode.SimpleFold(r)
		if f <= r {
			return f
		}
		r = f
	}
}

// AppendKey appends Key(s) to dst. With a stack buffer it lets a caller look
// a key up in a map of Keys without allocating: m[string(AppendKey(buf[:0], s))].
func AppendKey(dst []byte, s string) []byte {
	for {
		r, n := next(s)
		if n == 0 {
			return dst
		}
		dst = utf8.AppendRune(dst, Rune(r))
		s = s[n:]
	}
}
