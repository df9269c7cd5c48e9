package secrets

import (
	"math/bits"
	"slices"
	"strings"
)

// The segment search finds, without running a regexp, the few stretches
// of a text that can hold a match, and runs each pattern's regexp on
// those alone. It is hand-written for measured speed (BenchmarkFind1MiB,
// proxy's BenchmarkScanJSON1MiB: a regexp over a whole 1 MiB result cost
// 17 to 150 ms) and held to the regexps over the whole text by
// FuzzSegmentsMatchTheReference.
//
// Why a regexp run on a segment finds what it finds in the whole text:
// every match holds a trigger of its pattern, and the segment found from
// that trigger holds the whole match, so the segments of a pattern, merged
// where they overlap, hold every match. None of the regexps looks past a
// match's end (no $ or \b there), so a match found in a segment is the one
// found in the whole text from the same place, provided the segment starts
// and ends between runes and, for a regexp starting with \b, starts after
// a byte that is not a word character (or at the start of the text).

// A segment is the byte span s[a:b] of a text, searched for patterns[p].
type segment struct {
	p    int
	a, b int
}

// byteSet is a set of bytes; sets that hold the bytes of non-ASCII runes
// hold every byte from 0x80 on, since (?i) folds "\u212A" (Kelvin) to k
// and "\u017F" (long s) to s.
type byteSet [256]bool

func newByteSet(chars string, nonASCII bool) *byteSet {
	var set byteSet
	for i := 0; i < len(chars); i++ {
		set[chars[i]] = true
	}
	for c := 0x80; nonASCII && c < 0x100; c++ {
		set[c] = true
	}
	return &set
}

// without returns the set of every byte not in chars.
func without(chars string) *byteSet {
	set := newByteSet("", true)
	for c := range 0x80 {
		set[c] = !strings.ContainsRune(chars, rune(c))
	}
	return set
}

const (
	lettersDigits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	blanks        = "\t\n\f\r " // \s in Go's regexps
)

var (
	// bearerValue holds the bytes of a Bearer credential.
	bearerValue = newByteSet(lettersDigits+"._~+/=-", true)
	// basicSpan holds every byte after "authorization" in a Basic match.
	basicSpan = newByteSet(lettersDigits+"+/=._-\"':"+blanks, true)
	// schemeBytes holds the bytes of a URL scheme; urlRest every byte of
	// a URL password match after "://".
	schemeBytes = newByteSet(lettersDigits+"+.-", true)
	urlRest     = without("/" + blanks)
	// queryKey holds the bytes of a secret query parameter's name,
	// queryValue those of its value.
	queryKey   = newByteSet(lettersDigits[:52]+"_", true)
	queryValue = without("&;#\"'" + blanks)
	// tokenBytes holds the bytes of a service token (ASCII only: the
	// token regexp does not ignore case).
	tokenBytes = newByteSet(lettersDigits+"_.-", false)
	blankBytes = newByteSet(blanks, false)
	wordBytes  = newByteSet(lettersDigits+"_", false)
)

// A segmentFunc says how a pattern's segments are found (a switch, not a
// func value: a func value's arguments escape, and Contains must not
// allocate).
type segmentFunc uint8

const (
	bearerSegments segmentFunc = iota
	basicSegments
	urlSegments
	querySegments
	tokenSegments
	privateKeySegments
	keyBodySegments
	assignmentSegments
)

// segment returns the segment that holds every match of p holding the
// trigger at t, ok false when there can be none. m keeps the end of the
// last run measured, so that runs shared by many triggers are measured
// once.
func (p *pattern) segmentAt(s string, t int, m *runMemo, names *NameMemo) (a, b int, ok bool) {
	switch p.segment {
	case bearerSegments:
		return bearerSegment(s, t, m)
	case basicSegments:
		return basicSegment(s, t, m)
	case urlSegments:
		return urlSegment(s, t, m)
	case querySegments:
		return querySegment(s, t, m)
	case tokenSegments:
		return tokenSegment(s, t, m)
	case keyBodySegments:
		return keyBodySegment(s, t+1, m) // the line after the trigger's line break
	case assignmentSegments:
		return assignmentSegment(s, t, m, names)
	}
	return privateKeySegment(s, t)
}

func bearerSegment(s string, t int, m *runMemo) (int, int, bool) {
	j := t + len("bearer")
	k := runEnd(s, j, blankBytes)
	if k == j || k == len(s) {
		return 0, 0, false // \s+ then the credential
	}
	b := m.end(s, k, bearerValue)
	return t, b, b-k >= 6 // at least 6 runes of credential, each a byte or more
}

func basicSegment(s string, t int, m *runMemo) (int, int, bool) {
	return t, m.end(s, t+len("authorization"), basicSpan), true
}

func urlSegment(s string, t int, m *runMemo) (int, int, bool) {
	r := t
	for r > 0 && schemeBytes[s[r-1]] {
		r--
	}
	if r == t {
		return 0, 0, false
	}
	a := r
	if r > 0 && s[r-1] == '_' {
		a-- // the only word character that is not a scheme byte: \b needs it
	}
	b := m.end(s, t+len("://"), urlRest)
	return a, b, strings.IndexByte(s[t:b], '@') >= 0 // the password ends at an @
}

func querySegment(s string, t int, m *runMemo) (int, int, bool) {
	r := t
	for r > 0 && queryKey[s[r-1]] {
		r--
	}
	if r == t || r == 0 || !strings.ContainsRune("?&;", rune(s[r-1])) || asciiOnly(s[r:t]) && !isQueryKey(s[r:t]) {
		return 0, 0, false
	}
	b := m.end(s, t+1, queryValue)
	return r - 1, b, b > t+1
}

func tokenSegment(s string, t int, m *runMemo) (int, int, bool) {
	b := m.end(s, t, tokenBytes)
	return t, b, b-t >= 15 // the shortest token: xoxa- and 10 more
}

// queryKeys are the names of the secret query parameters, as the
// QueryParam regexp spells them out.
var queryKeys = []string{"access_token", "refresh_token", "id_token", "token", "api_key", "apikey", "key", "secret",
	"client_secret", "password", "passwd", "sig", "signature", "auth"}

// isQueryKey reports whether ASCII name is one of the queryKeys, ignoring
// case. (A name with other bytes is left to the regexp: "\u212Aey" is key
// to it.)
func isQueryKey(name string) bool {
	for _, k := range queryKeys {
		if len(k) == len(name) && hasPrefixFold(name, k) {
			return true
		}
	}
	return false
}

// runEnd returns the first index from i on whose byte is not in set, or
// len(s).
func runEnd(s string, i int, set *byteSet) int {
	for i < len(s) && set[s[i]] {
		i++
	}
	return i
}

// A runMemo remembers one run of a pattern's set: every index from..end
// has its run end at end.
type runMemo struct{ from, to int }

func (m *runMemo) end(s string, i int, set *byteSet) int {
	if m.to > 0 && i >= m.from && i <= m.to {
		return m.to
	}
	m.from, m.to = i, runEnd(s, i, set)
	return m.to
}

// pairs maps the first two bytes of a trigger (the byte after a one-byte
// trigger being any) to the set of patterns, bit i for patterns[i], that
// trigger may start one of.
var pairs = func() *[1 << 16]uint8 {
	var t [1 << 16]uint8
	for i, p := range patterns {
		for _, tr := range p.triggers {
			firsts, seconds := variants(tr[0], p.fold), []byte(nil)
			if len(tr) > 1 {
				seconds = variants(tr[1], p.fold)
			} else {
				for c := range 256 {
					seconds = append(seconds, byte(c))
				}
			}
			for _, c0 := range firsts {
				for _, c1 := range seconds {
					t[int(c0)<<8|int(c1)] |= 1 << i
				}
			}
		}
	}
	return &t
}()

func variants(c byte, fold bool) []byte {
	if l := toLowerASCII(c); fold && l >= 'a' && l <= 'z' {
		return []byte{l, l - 'a' + 'A'}
	}
	return []byte{c}
}

// A segmenter keeps what finding one text's segments needs besides the
// segments, which its caller passes in and gets back (a slice on the
// caller's stack: Contains on harmless text must not allocate).
type segmenter struct {
	last  [8]int // index in segs of each pattern's last segment, plus one (8: a uint8 set's patterns)
	memo  [8]runMemo
	names NameMemo
	whole uint8 // patterns to run on the whole text instead
}

// findSegments appends to segs the segments of s for the patterns in set
// (bit i for patterns[i]), each pattern's in order, overlapping ones
// merged.
func findSegments(s string, set uint8, segs []segment) []segment {
	var g segmenter
	if len(s) == 0 {
		return segs
	}
	// Hand-written for measured speed (BenchmarkFind1MiB): one pass, a
	// table look-up per byte.
	if set&(1<<bodyPattern) != 0 && s[0] != '\n' {
		// The first line has no line break before it to trigger it.
		if a, b, ok := keyBodySegment(s, 0, &g.memo[bodyPattern]); ok {
			segs = g.add(bodyPattern, a, b, segs)
		}
	}
	tab, prev := pairs, s[0]
	for i := 1; i < len(s); i++ {
		c := s[i]
		if m := tab[uint16(prev)<<8|uint16(c)] & set; m != 0 {
			segs = g.trigger(s, i-1, m, segs)
		}
		prev = c
	}
	if m := pairs[uint16(prev)<<8] & set; m != 0 {
		segs = g.trigger(s, len(s)-1, m, segs)
	}
	if g.whole != 0 {
		segs = slices.DeleteFunc(segs, func(sg segment) bool { return g.whole&(1<<sg.p) != 0 })
		for i := range patterns {
			if g.whole&(1<<i) != 0 {
				segs = append(segs, segment{i, 0, len(s)})
			}
		}
	}
	return segs
}

// trigger adds to segs the segments found from position t, where one of
// the triggers of the patterns in set may start.
func (g *segmenter) trigger(s string, t int, set uint8, segs []segment) []segment {
	for ; set != 0; set &= set - 1 { // the patterns in set only, in order
		i := bits.TrailingZeros8(set)
		p := &patterns[i]
		if p.wordStart && t > 0 && isWordByte(s[t-1]) || !p.triggeredAt(s[t:]) {
			continue
		}
		a, b, ok := p.segmentAt(s, t, &g.memo[i], &g.names)
		if ok {
			segs = g.add(i, a, b, segs)
		}
	}
	return segs
}

// add adds the segment s[a:b] of patterns[i] to segs, merged with the
// pattern's last segment where they overlap.
func (g *segmenter) add(i, a, b int, segs []segment) []segment {
	if g.last[i] == 0 {
		segs = append(segs, segment{i, a, b})
		g.last[i] = len(segs)
		return segs
	}
	l := &segs[g.last[i]-1]
	switch {
	case a < l.a:
		g.whole |= 1 << i // cannot be (starts only grow); the whole text is always right
	case a <= l.b:
		l.b = max(l.b, b)
	default:
		segs = append(segs, segment{i, a, b})
		g.last[i] = len(segs)
	}
	return segs
}

// triggeredAt reports whether s begins with one of p's triggers.
func (p *pattern) triggeredAt(s string) bool {
	for _, tr := range p.triggers {
		if len(tr) == 1 { // the line break, = and : (s is never empty here)
			if s[0] == tr[0] {
				return true
			}
			continue
		}
		if p.fold && hasPrefixFold(s, tr) || !p.fold && strings.HasPrefix(s, tr) {
			return true
		}
	}
	return false
}

// isWordByte reports whether c is an ASCII word character, as \b reads
// them; the bytes of other runes are not.
func isWordByte(c byte) bool { return wordBytes[c] }
