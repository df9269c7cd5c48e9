package secrets

import "bytes"

// maxTrigger is the length of the longest trigger of any pattern.
const maxTrigger = 16

// triggeredIn reports whether lower, lower-cased text, holds one of p's
// triggers.
func (p *pattern) triggeredIn(lower []byte) bool {
	for _, t := range p.triggers {
		if bytes.Contains(lower, []byte(t)) {
			return true
		}
	}
	return false
}

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

// window is the number of bytes of text lower-cased at a time into a buffer
// on the stack, so that the search for triggers allocates nothing.
const window = 512

// triggeredSet returns the set of patterns (bit i for patterns[i]) whose
// triggers ASCII s holds, ignoring case. It lower-cases s a window at a
// time, each window overlapping the last by the longest trigger less one,
// and searches each window with the library's fast substring search.
func triggeredSet(s string) uint32 {
	var buf [window + maxTrigger]byte
	var set, all uint32
	for i := range patterns {
		all |= 1 << i
	}
	for off := 0; off < len(s) && set != all; off += window {
		end := min(off+window+maxTrigger-1, len(s))
		w := buf[:end-off]
		for j := range w {
			w[j] = toLowerASCII(s[off+j])
		}
		for i := range patterns {
			if set&(1<<i) == 0 && patterns[i].triggeredIn(w) {
				set |= 1 << i
			}
		}
		if end == len(s) {
			break
		}
	}
	return set
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
