package argview

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestQuoteShowsEveryHiddenCharacterAsAnEscape(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"plain text is kept", "notes/run.sh", `"notes/run.sh"`},
		{"quotes and backslashes are escaped", `a"b\c`, `"a\"b\\c"`},
		{"line breaks, carriage returns and tabs are escaped", "a\nb\rc\td", `"a\nb\rc\td"`},
		{"a terminal escape is escaped", "\x1b[2K", `"\u001b[2K"`},
		{"bidirectional overrides and isolates are escaped", "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c", `"\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"`},
		{"zero-width characters are escaped", "\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff", `"\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff"`},
		{"variation selectors are escaped", "a\ufe00\ufe0f\U000E0100\U000E01EF", `"a\ufe00\ufe0f\udb40\udd00\udb40\uddef"`},
		{"tag characters are escaped", "\U000E0000\U000E0041\U000E007F", `"\udb40\udc00\udb40\udc41\udb40\udc7f"`},
		{"the soft hyphen is escaped", "run\u00adsh", `"run\u00adsh"`},
		{"line and paragraph separators and C1 controls are escaped", "\u2028\u2029\u0085", `"\u2028\u2029\u0085"`},
		{"private use and unassigned code points are escaped", "\ue000\U0010FFFD\u0378", `"\ue000\udbff\udffd\u0378"`},
		{"no-break and wide spaces are escaped", "a\u00a0b\u3000c", `"a\u00a0b\u3000c"`},
		{"fillers that show nothing are escaped", "\u3164\u115f\u034f", `"\u3164\u115f\u034f"`},
		{"letters of any script are kept", "Größe 日本語 😀", `"Größe 日本語 😀"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Quote(tt.in); got != tt.want {
				t.Errorf("Quote(%q) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestVisibleKeepsEscapesAsTheyAre(t *testing.T) {
	t.Parallel()
	if got, want := Visible(`"a\nb"`+"\r\u202e"), `"a\nb"\r\u202e`; got != want {
		t.Errorf("Visible = %s, want %s", got, want)
	}
}

// FuzzQuote checks that Quote's result is one line of visible characters
// that decodes as JSON to the text quoted.
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"", "a\nb", "\u202e\U000E0041\ufe0f", `"\`, "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := Quote(s)
		for _, r := range q {
			if hidden(r) {
				t.Fatalf("Quote(%q) = %q holds U+%04X", s, q, r)
			}
		}
		var back string
		if err := json.Unmarshal([]byte(q), &back); err != nil {
			t.Fatalf("Quote(%q) = %s is not JSON: %v", s, q, err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("Quote(%q) = %s decodes to %q", s, q, back)
		}
		if e := Escape(s); strings.ContainsAny(e, "\n\r") {
			t.Fatalf("Escape(%q) = %q has a line break", s, e)
		}
	})
}
