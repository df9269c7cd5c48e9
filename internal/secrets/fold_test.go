package secrets

import (
	"strings"
	"testing"
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

// TestTriggeredSetAgreesWithLowerCasing holds the windowed search to the
// search of the whole text lower-cased, across window boundaries.
func TestTriggeredSetAgreesWithLowerCasing(t *testing.T) {
	t.Parallel()
	if len(patterns) > 32 {
		t.Fatalf("%d patterns do not fit the uint32 set of candidates", len(patterns))
	}
	for _, p := range patterns {
		for _, tr := range p.triggers {
			if len(tr) > maxTrigger || tr != strings.ToLower(tr) {
				t.Fatalf("trigger %q is longer than maxTrigger or not lower case", tr)
			}
		}
	}
	pad := strings.Repeat("x", window-3)
	for _, s := range []string{"", "Bearer", pad + "BEARER", pad + "-----BEGIN RSA PRIVATE KEY-----", strings.Repeat(pad, 3) + "Gh", pad + "a://b" + pad + "xoX"} {
		var want uint32
		for i := range patterns {
			if oldTriggered(&patterns[i], strings.ToLower(s)) {
				want |= 1 << i
			}
		}
		if got := triggeredSet(s); got != want {
			t.Errorf("triggeredSet(%d bytes ending %q) = %b, want %b", len(s), s[max(0, len(s)-12):], got, want)
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

// oldTriggered is the trigger search this package used before: search the
// text lower-cased once per call. It stays as the benchmarks' baseline.
func oldTriggered(p *pattern, lower string) bool {
	for _, t := range p.triggers {
		if strings.Contains(lower, t) {
			return true
		}
	}
	return false
}

var benchText = "Processed 42 files in /home/user/project/src; all checks passed and the build is green."

func BenchmarkTriggersLowerCased(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		lower := strings.ToLower(benchText)
		for i := range patterns {
			_ = oldTriggered(&patterns[i], lower)
		}
	}
}

func BenchmarkTriggersFolded(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = candidates(benchText)
	}
}

func BenchmarkRedactHarmless(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = Redact(benchText, "<m>")
	}
}

// FuzzTriggersNeverHideAMatch holds the trigger search to what it is for:
// a pattern whose regexp matches s is always among the candidates of s,
// so skipping the others never keeps a credential out of Redact.
func FuzzTriggersNeverHideAMatch(f *testing.F) {
	for _, s := range []string{"Authorization: Ba\u017Fic dXNlcjpwYXNz", "x://:p@", strings.Repeat("x", window-2) + "Bearer abcdef123456", "?\u212Aey=v"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		set := candidates(s)
		for i := range patterns {
			if patterns[i].re.MatchString(s) && set&(1<<i) == 0 {
				t.Fatalf("pattern %d matches %q but was not a candidate", i, s)
			}
		}
	})
}
