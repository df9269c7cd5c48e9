package secrets

import "strings"

// The segments of the formats that span lines (private keys, their
// bodies) and of secret-named assignments, and the filters that keep a
// match of the last two; segments.go says what a segment must hold.

// endLine is the trigger of a private key's END line.
const endLine = "-----END "

var (
	// keyBodyBytes holds the bytes of the lines before a private key's END
	// line, line breaks included; keyBase64 those of one PEM body line.
	keyBodyBytes = newByteSet(lettersDigits+"+/=\r\n", false)
	keyBase64    = newByteSet(lettersDigits+"+/", false)
	keyLineBytes = newByteSet(lettersDigits+"+/=", false)
	// endLineBytes holds the bytes of an END line after "-----END ".
	endLineBytes = newByteSet("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -", false)
	// nameBytes holds the bytes of an assigned key's name, nameStart
	// those it can start with; valueBytes those of its value.
	nameBytes  = newByteSet(lettersDigits+"_.-", false)
	nameStart  = newByteSet(lettersDigits[:52]+"_", false)
	valueBytes = without("\"',;&=:" + blanks)
)

// privateKeySegment is the segment of a private key from the trigger at
// t: from a BEGIN line or a PuTTY key's header or private lines to the end
// of the text (the regexp stops at the END line or the MAC, if any), and
// from an END line back over the base64 lines and line breaks before it,
// which the bytes before them cannot continue: a match cannot start
// before its base64 lines but by starting at an earlier trigger, whose
// segment runs to the end.
func privateKeySegment(s string, t int) (int, int, bool) {
	if !strings.HasPrefix(s[t:], endLine) {
		return t, len(s), true
	}
	a := t
	for a > 0 && keyBodyBytes[s[a-1]] {
		a--
	}
	return a, runEnd(s, t+len(endLine), endLineBytes), true
}

// keyBodySegment is the segment of the PEM body lines that can match from
// the line starting at ls: nothing unless that line is a whole body line
// (64 or 70 base64 characters, a \r allowed before its line break); then
// from the line before it, if that is base64 too, to the line break
// after the last line of base64 that follows. The regexp matches whole
// lines only, so no match crosses a line that is not base64, and its
// leftmost start in the text is the line before the first whole body
// line of the run or that line itself. m keeps the run found last: the
// other whole lines of a run are in it.
func keyBodySegment(s string, ls int, m *runMemo) (int, int, bool) {
	if m.to > 0 && ls >= m.from && ls < m.to {
		return m.from, m.to, true
	}
	end, next := lineEnd(s, ls)
	if n := end - ls; n != 64 && n != 70 || runEnd(s, ls, keyBase64) != end {
		return 0, 0, false
	}
	a := ls
	if ls > 0 {
		p := strings.LastIndexByte(s[:ls-1], '\n') + 1
		if e, _ := lineEnd(s, p); e > p && runEnd(s, p, keyLineBytes) == e {
			a = p
		}
	}
	b := next
	for i := next; i < len(s); {
		e, n := lineEnd(s, i)
		if e == i || runEnd(s, i, keyLineBytes) != e {
			break
		}
		b, i = n, n
	}
	m.from, m.to = a, b
	return a, b, true
}

// lineEnd returns the end of the line starting at i without its line
// break and a \r before it, and the start of the next line (len(s) if
// none follows).
func lineEnd(s string, i int) (end, next int) {
	j := strings.IndexByte(s[i:], '\n')
	if j < 0 {
		end, next = len(s), len(s)
	} else {
		end, next = i+j, i+j+1
	}
	if end > i && s[end-1] == '\r' {
		end--
	}
	return end, next
}

// assignmentSegment is the segment of a secret-named assignment whose =
// or : is at t: the whole line, when the key before t is a secret key and
// a value of six bytes or more follows. No match crosses a line start
// (nothing of one holds a line break but a line break ending it), so the
// matches in a line are those of the text; the key a match assigns is the
// name before its = or :, after one quote and blanks, from its first
// letter or _. m keeps the line found last.
func assignmentSegment(s string, t int, m *runMemo, names *NameMemo) (int, int, bool) {
	// The value first: it is the cheaper test and rules out most triggers
	// (a JSON number, an object, a URL's scheme).
	v := t + 1
	for v < len(s) && (s[v] == ' ' || s[v] == '\t') {
		v++
	}
	if v < len(s) && (s[v] == '"' || s[v] == '\'') {
		v++
	}
	if v+6 > len(s) || runEnd(s, v, valueBytes)-v < 6 {
		return 0, 0, false
	}
	r := t
	for r > 0 && (s[r-1] == ' ' || s[r-1] == '\t') {
		r--
	}
	if r > 0 && (s[r-1] == '"' || s[r-1] == '\'') {
		r--
	}
	n := r
	for n > 0 && nameBytes[s[n-1]] {
		n--
	}
	for n < r && !nameStart[s[n]] {
		n++
	}
	if n == r || !names.Credential(s[n:r]) {
		return 0, 0, false
	}
	if m.to > 0 && t >= m.from && t < m.to {
		return m.from, m.to, true
	}
	a := strings.LastIndexByte(s[:n], '\n') + 1
	_, b := lineEnd(s, t)
	m.from, m.to = a, b
	return a, b, true
}

// A NameMemo answers IsCredentialName for the names of one text or JSON
// document, remembering the last few names that are not a credential's:
// the names of a document's records repeat, and most are not
// (BenchmarkScanJSON1MiB/structured). The zero value is ready to use; it is
// not safe for concurrent use.
type NameMemo struct {
	plain [4]string
	next  int
}

// Credential reports IsCredentialName(name), asking it only for a name not
// among the last plain ones seen.
func (c *NameMemo) Credential(name string) bool {
	for _, p := range c.plain {
		if p == name {
			return false
		}
	}
	if IsCredentialName(name) {
		return true
	}
	c.plain[c.next%len(c.plain)] = name
	c.next++
	return false
}

// A filterFunc says which matches of a pattern count (a switch, as
// segmentFunc is).
type filterFunc uint8

const (
	noFilter filterFunc = iota
	keyBodyFilter
	keyNameFilter
)

// accepts reports whether p's filter keeps match m, submatch indexes into
// s.
func (p *pattern) accepts(s string, m []int) bool {
	switch p.filter {
	case keyBodyFilter:
		k := 2 * p.re.SubexpIndex("s")
		return keyBodyAccepted(s, m[k], m[k+1])
	case keyNameFilter:
		k := 2 * p.re.SubexpIndex("k")
		return IsCredentialName(s[m[k]:m[k+1]])
	}
	return true
}

// keyBodyAccepted reports whether the run of base64 lines s[a:b] is key
// material: one of its lines of 64 or 70 characters holds a character
// that is not hexadecimal (a line of a sha256 digest is all hexadecimal),
// and the lines before it are not the BEGIN line of a public block (a
// certificate, a public key, a PGP signature), with only armour headers
// or a blank line between.
func keyBodyAccepted(s string, a, b int) bool {
	if !hasKeyLine(s[a:b]) {
		return false
	}
	for i, seen := a, 0; i > 0 && seen < 8; seen++ {
		p := strings.LastIndexByte(s[:i-1], '\n') + 1
		line := strings.TrimSuffix(s[p:i-1], "\r")
		switch {
		case strings.HasPrefix(line, "-----BEGIN "):
			return strings.Contains(line, "PRIVATE")
		case line != "" && !strings.Contains(line, ": "):
			return true
		}
		i = p
	}
	return true
}

// hasKeyLine reports whether one line of run is 64 or 70 base64
// characters not all hexadecimal.
func hasKeyLine(run string) bool {
	for run != "" {
		line, rest, _ := strings.Cut(run, "\n")
		line = strings.TrimSuffix(line, "\r")
		if len(line) == 64 || len(line) == 70 {
			for i := 0; i < len(line); i++ {
				if c := line[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
					return true
				}
			}
		}
		run = rest
	}
	return false
}
