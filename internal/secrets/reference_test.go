package secrets

import (
	"slices"
	"strings"
	"testing"
)

// The reference is the straightforward detector the segment search
// replaced (issue 21): every pattern's regexp run over the whole text,
// keeping the matches its filter accepts (issue 31).
// Before, a trigger search only skipped regexps that could not match
// (FuzzTriggersNeverHideAMatch held it to that), so these are the
// findings and redactions of every earlier version — including its
// shortcut for text shorter than minLen, which misses "&key=0" (6 bytes):
// the segment search keeps it, since it changes no finding.

func refContains(s string) bool {
	if len(s) < minLen {
		return false
	}
	return slices.ContainsFunc(patterns, func(p pattern) bool { return len(refMatches(&p, s)) > 0 })
}

func refFind(s string) []Match {
	if len(s) < minLen {
		return nil
	}
	var out []Match
	for i := range patterns {
		p := &patterns[i]
		g := 2 * p.re.SubexpIndex("s")
		for _, m := range refMatches(p, s) {
			out = append(out, Match{Kind: p.kind, Start: m[g], End: m[g+1]})
		}
	}
	return out
}

func refRedact(s, mask string) string {
	if len(s) < minLen {
		return s
	}
	for i := range patterns {
		p := &patterns[i]
		if p.filter == noFilter {
			s = p.re.ReplaceAllString(s, p.template(mask))
		} else if next, ok := p.replace(s, 0, len(s), mask); ok {
			s = next
		}
	}
	return s
}

// refMatches is every match of p's regexp over the whole text that p's
// filter accepts.
func refMatches(p *pattern, s string) [][]int {
	var out [][]int
	for _, m := range p.re.FindAllStringSubmatchIndex(s, -1) {
		if p.accepts(s, m) {
			out = append(out, m)
		}
	}
	return out
}

// FuzzSegmentsMatchTheReference holds Find, Contains and Redact to the
// reference on any text, with the text's credentials placed among
// characters the segment search stops or turns at.
func FuzzSegmentsMatchTheReference(f *testing.F) {
	for _, s := range []string{
		"Authorization: Bearer abcdef123456", "authorization = 'BASIC dXNlcjpwYXNz'", "Authorization: Ba\u017Fic dXNlcjpwYXNz",
		"_http://u:p@h", "a://bhttp://u:p@h/x", "\u212Aa://u:p@h", "x\u212A://u:p@h", "postgres://u:pw123@h/db",
		"https://h/x?\u017Fecret=zzzz9&q=1", "?token=?token=a;key=b", "https://h/x?api_\u212Aey=zz",
		"ghp_abcdefghijklmnopqrstuvwxyz0123", "-ghp_abcdefghijklmnopqrstuvwxyz0123", "aghp_abcdefghijklmnopqrstuvwxyz0123",
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig", "eyJ-eyJ-eyJ-eyJ-eyJabcdefgh.eyJabcdefgh",
		"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\nrest -----BEGIN EC PRIVATE KEY-----",
		"-----BEGIN A PRIVATE KEY-----END A PRIVATE KEY-----", "bearer bearer-bearer-bearer \xc5\xbfxyzabc",
		"x=1;y=\xff\xfe;auth=\xe2\x84\xaa", "&keY=0", "?sig=xy", "AKIAABCDEFGHIJKLMNOP AIza" + strings.Repeat("b", 35),
		"ab\n" + strings.Repeat("Q", 64) + "\r\ncd==\n-----END RSA PRIVATE KEY-----x", strings.Repeat("A", 70) + "\n" + strings.Repeat("e", 64),
		"-----BEGIN CERTIFICATE-----\n" + strings.Repeat("Qb", 32) + "\n=x\n", "Version: 1\n\n" + strings.Repeat("Qb", 32) + "\r",
		"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nabc\n-----END PGP PRIVATE KEY BLOCK-----",
		"PuTTY-User-Key-File-3: ssh-rsa\nPrivate-Lines: 1\nQUJD\nPrivate-MAC: 00ff", "x\nPrivate-Lines: 2\nQUJD\r\nQUJD",
		"export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG", `x="a/password": "hunter22"`, "see: PASSWORD=hunter22;9pat=abcdef#",
		"mypat=abcdefg\n_pat = 'abcdefg==' }", "Authorization: Bearer abcdef123456\ntoken:\tabcdef,",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Find(s), refFind(s); !slices.Equal(got, want) {
			t.Fatalf("Find(%q) = %v, want %v", s, got, want)
		}
		if got, want := Contains(s), refContains(s); got != want {
			t.Fatalf("Contains(%q) = %v, want %v", s, got, want)
		}
		if got, want := Redact(s, "<m>"), refRedact(s, "<m>"); got != want {
			t.Fatalf("Redact(%q) = %q, want %q", s, got, want)
		}
	})
}

// TestSegmentsMatchTheReferenceOnLargeTexts holds the segment search to
// the reference on the benchmarks' texts with credentials spliced in.
func TestSegmentsMatchTheReferenceOnLargeTexts(t *testing.T) {
	t.Parallel()
	secrets := []string{
		" Bearer abcdef123456 ", "Authorization: Basic dXNlcjpwYXNz", "https://bob:hunter22@example.com/x",
		"?api_key=zzz&", "ghp_abcdefghijklmnopqrstuvwxyz0123", "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n",
	}
	for _, in := range benchInputs() {
		text := in.text[:1<<16]
		for i, sec := range secrets {
			at := (i*7919 + 13) % len(text)
			text = text[:at] + sec + text[at:]
		}
		if got, want := Find(text), refFind(text); !slices.Equal(got, want) {
			t.Errorf("%s: Find = %v, want %v", in.name, got, want)
		}
		if got, want := Redact(text, "<m>"), refRedact(text, "<m>"); got != want {
			t.Errorf("%s: Redact differs from the reference", in.name)
		}
	}
}
