package rules

import (
	"regexp"
	"strings"
	"testing"
)

// TestNameGrammarsMatchTheirRegexps checks the hand-written checks
// against the regular expressions that messages quote.
func TestNameGrammarsMatchTheirRegexps(t *testing.T) {
	t.Parallel()
	server, wire := regexp.MustCompile(ServerNameGrammar), regexp.MustCompile(WireNameGrammar)
	for _, s := range []string{
		"", "fs", "0", "a-b_c", "-fs", "_fs", "Fs", "fs.x", "fs:x", "fs ", "fs\n", "é",
		strings.Repeat("a", 32), strings.Repeat("a", 33), strings.Repeat("A", 64), strings.Repeat("A", 65),
		"GitHub__Search", "gh__search-v2",
	} {
		if got, want := ValidServerName(s), server.MatchString(s); got != want {
			t.Errorf("ValidServerName(%q) = %v, the regexp says %v", s, got, want)
		}
		if got, want := ValidWireName(s), wire.MatchString(s); got != want {
			t.Errorf("ValidWireName(%q) = %v, the regexp says %v", s, got, want)
		}
	}
}

func FuzzNameGrammars(f *testing.F) {
	f.Add("fs")
	f.Add("GitHub__Search")
	server, wire := regexp.MustCompile(ServerNameGrammar), regexp.MustCompile(WireNameGrammar)
	f.Fuzz(func(t *testing.T, s string) {
		if ValidServerName(s) != server.MatchString(s) || ValidWireName(s) != wire.MatchString(s) {
			t.Fatalf("the grammars disagree with their regexps on %q", s)
		}
		if ValidServerName(s) && !ValidWireName(s) {
			t.Fatalf("server name %q is no wire name", s)
		}
	})
}
