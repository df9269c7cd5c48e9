package secrets

// asciiOnly reports whether s holds only ASCII bytes. Only then does ASCII
// case folding agree with the Unicode folding that strings.ToLower and the
// regexps' (?i) apply: "\u212A" (Kelvin) folds to "k" and "\u017F" (long s)
// to "s", so text with other bytes takes the slow, exact path.
func asciiOnly(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// containsFold reports whether s holds lower (ASCII, lower case) ignoring
// ASCII case, without allocating. It is exact only for ASCII s.
func containsFold(s, lower string) bool {
	n := len(lower)
	if n == 0 {
		return true
	}
	first := lower[0]
	for i := 0; i+n <= len(s); i++ {
		if toLowerASCII(s[i]) != first {
			continue
		}
		if hasPrefixFold(s[i:], lower) {
			return true
		}
	}
	return false
}

// hasPrefixFold reports whether s begins with lower (ASCII, lower case)
// ignoring ASCII case.
func hasPrefixFold(s, lower string) bool {
	if len(s) < len(lower) {
		return false
	}
	for j := 0; j < len(lower); j++ {
		if toLowerASCII(s[j]) != lower[j] {
			return false
		}
	}
	return true
}

// toLowerASCII returns c lower-cased if it is an ASCII capital.
func toLowerASCII(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
