package secrets

import (
	"strings"
	"testing"
	"unicode"
)

// TestLongSInTheSchemeDoesNotHideABasicHeader is the attack on the trigger
// search: a (?i) regexp folds U+017F (long s) to "s", lower-casing does
// not, so "ba\u017Fic" once matched the regexp but not its trigger and the
// credential reached the audit log whole.
func TestLongSInTheSchemeDoesNotHideABasicHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
	}{
		{"a long s in basic", "Authorization: Ba\u017Fic dXNlcjpwYXNz"},
		{"a long s in a query key", "https://h/x?\u017Fecret=zzzz9&q=1"},
		{"a Kelvin sign in a query key", "https://h/x?api_\u212Aey=zzzz9&q=1"},
		{"a long s in an upper-case header", "AUTHORIZATION: BA\u017FIC dXNlcjpwYXNz"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Redact(tt.in, "<m>"); !strings.Contains(got, "<m>") || strings.Contains(got, "zzzz9") || strings.Contains(got, "dXNlcjpwYXNz") {
				t.Errorf("Redact(%q) = %q, want the credential masked", tt.in, got)
			}
			if !Contains(tt.in) {
				t.Errorf("Contains(%q) = false, want true", tt.in)
			}
		})
	}
}

// TestTriggersFoldOnlyInASCII holds the premise of comparing triggers
// ignoring ASCII case only: no letter of a trigger that folds is matched
// by a (?i) regexp as a rune outside ASCII, as k is by "\u212A" and s by
// "\u017F".
func TestTriggersFoldOnlyInASCII(t *testing.T) {
	t.Parallel()
	if len(patterns) > 8 || allPatterns != 1<<len(patterns)-1 {
		t.Fatalf("%d patterns do not fit the uint8 sets of patterns", len(patterns))
	}
	for _, p := range patterns {
		for _, tr := range p.triggers {
			if !p.fold {
				continue
			}
			for _, r := range tr {
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					if f >= 0x80 {
						t.Errorf("trigger %q: %q folds to %q", tr, r, f)
					}
				}
			}
		}
	}
}

// TestContainsFoldAgreesWithLowerCasing holds the ASCII search to what it
// replaces, strings.Contains(strings.ToLower(s), t).
func TestContainsFoldAgreesWithLowerCasing(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "B", "bearer", "xBeArEr", "bearexbearer", "BEARE", "private KEY-----", "a://b", "=", "gh", "Gh_"} {
		for _, p := range patterns {
			for _, tr := range p.triggers {
				tr = strings.ToLower(tr)
				if got, want := containsFold(s, tr), strings.Contains(strings.ToLower(s), tr); got != want {
					t.Errorf("containsFold(%q, %q) = %v, want %v", s, tr, got, want)
				}
			}
		}
	}
}

// TestScanningHarmlessASCIIDoesNotAllocate holds the audit log's common
// case, a string with no credential, to no allocation.
func TestScanningHarmlessASCIIDoesNotAllocate(t *testing.T) {
	s := "The quick brown fox jumps over the lazy dog, twice over."
	if n := testing.AllocsPerRun(100, func() { _ = Redact(s, "<m>"); _ = Contains(s); _ = IsSecretKey("Content-Type") }); n != 0 {
		t.Errorf("allocs per run = %v, want 0", n)
	}
}

// FuzzContainsFold holds the allocation-free search to lower-casing on
// ASCII text.
func FuzzContainsFold(f *testing.F) {
	f.Add("Bearer x", "bearer")
	f.Add("PRIVATE KEY-----", "private key-----")
	f.Fuzz(func(t *testing.T, s, sub string) {
		if !asciiOnly(s) || !asciiOnly(sub) {
			return
		}
		sub = strings.ToLower(sub)
		if got, want := containsFold(s, sub), strings.Contains(strings.ToLower(s), sub); got != want {
			t.Fatalf("containsFold(%q, %q) = %v, want %v", s, sub, got, want)
		}
	})
}

var benchText = "Processed 42 files in /home/user/project/src; all checks passed and the build is green."

func BenchmarkRedactHarmless(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = Redact(benchText, "<m>")
	}
}

// FuzzTriggersNeverHideAMatch holds the segment search to what it is
// for: every match of a pattern's regexp over the whole text lies in one
// of the segments found for the pattern, so running the regexp on those
// alone never keeps a credential out of Redact.
func FuzzTriggersNeverHideAMatch(f *testing.F) {
	for _, s := range []string{"Authorization: Ba\u017Fic dXNlcjpwYXNz", "x://:p@", strings.Repeat("x", 510) + "Bearer abcdef123456", "?\u212Aey=v", "_a://u:p@h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		segs := findSegments(s, allPatterns, nil)
		for i := range patterns {
			for _, m := range refMatches(&patterns[i], s) {
				in := false
				for _, sg := range segs {
					in = in || sg.p == i && sg.a <= m[0] && m[1] <= sg.b
				}
				if !in {
					t.Fatalf("pattern %d matches %q at %v, outside its segments %v", i, s, m, segs)
				}
			}
		}
	})
}
