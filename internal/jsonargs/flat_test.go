package jsonargs

import (
	"bytes"
	"reflect"
	"testing"
	"unicode/utf8"
)

func TestFastPathMatchesSlowPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		raw      string
		wantFast bool // whether the fast path takes the arguments
	}{
		{"an empty object is flat", `{}`, true},
		{"an empty object with spaces is flat", " { \t\r\n} ", true},
		{"one string is flat", `{"message":"hello from mcpwarden bench"}`, true},
		{"keys are sorted by their bytes", `{"b":"x","a":"y","C":"z","_x":"w"}`, true},
		{"numbers are kept as written", `{"n":-0.50e+010,"m":0,"k":12345678901234567890}`, true},
		{"booleans and null are flat", `{"t":true,"f":false,"n":null}`, true},
		{"spaces between tokens are dropped", "{ \"a\" :\n1 ,\t\"b\": \"x y\" }", true},
		{"non-ASCII text is flat", "{\"name\":\"caf\u00e9 \u4e16\u754c\"}", true},
		{"a duplicate key is left to the slow path", `{"path":"/tmp/a","path":"/etc/passwd"}`, false},
		{"keys folding to one are left to the slow path", `{"path":"/tmp/a","PATH":"/etc/passwd"}`, false},
		{"a long s folding to s is left to the slow path", "{\"source\":1,\"\u017fource\":2}", false},
		{"a KELVIN SIGN folding to K is left to the slow path", "{\"Keys\":1,\"\u212aeys\":2}", false},
		{"keys equal but for an underscore are left to the slow path", `{"file_path":1,"filePath":2}`, false},
		{"an escape is left to the slow path", `{"path":"a\"b"}`, false},
		{"an escaped NUL is left to the slow path", `{"path":"/srv/a\u0000/etc"}`, false},
		{"an escaped key is left to the slow path", `{"p\u0061th":"/x"}`, false},
		{"a raw NUL is left to the slow path", "{\"path\":\"a\x00b\"}", false},
		{"a raw control character is left to the slow path", "{\"path\":\"a\tb\"}", false},
		{"HTML characters are left to the slow path", `{"q":"a<b>&c"}`, false},
		{"U+2028 is left to the slow path", "{\"q\":\"a\u2028b\"}", false},
		{"nesting is left to the slow path", `{"o":{"a":1}}`, false},
		{"an array is left to the slow path", `{"a":[1,2]}`, false},
		{"a leading zero is left to the slow path", `{"n":01}`, false},
		{"a bare minus is left to the slow path", `{"n":-}`, false},
		{"a fraction without digits is left to the slow path", `{"n":1.}`, false},
		{"an exponent without digits is left to the slow path", `{"n":1e+}`, false},
		{"a misspelt literal is left to the slow path", `{"b":tru}`, false},
		{"a literal run on is left to the slow path", `{"b":truex}`, false},
		{"trailing data is left to the slow path", `{"a":1}{"a":2}`, false},
		{"a trailing comma is left to the slow path", `{"a":1,}`, false},
		{"a missing colon is left to the slow path", `{"a" 1}`, false},
		{"a truncated object is left to the slow path", `{"a":1`, false},
		{"a top-level array is left to the slow path", `[1]`, false},
		{"a top-level string is left to the slow path", `"x"`, false},
		{"seventeen keys are left to the slow path", `{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			gotFast := fastMatchesSlow(t, []byte(tt.raw))
			if gotFast != tt.wantFast {
				t.Errorf("fast path took %q: %v, want %v", tt.raw, gotFast, tt.wantFast)
			}
		})
	}
}

// fastMatchesSlow fails t if the fast path takes raw and returns anything
// other than what the slow path returns for it, and reports whether the
// fast path took it. raw is prepared as Parse prepares it.
func fastMatchesSlow(t *testing.T, raw []byte) bool {
	t.Helper()
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) || !utf8.Valid(raw) {
		return false
	}
	fastM, fastCanonical, ok := parseFlat(raw)
	if !ok {
		return false
	}
	slowM, slowCanonical, err := parseSlow(raw)
	if err != nil {
		t.Fatalf("the fast path accepted %q, which the slow path refuses: %v", raw, err)
	}
	if !bytes.Equal(fastCanonical, slowCanonical) {
		t.Fatalf("for %q the fast path gives %s, the slow path %s", raw, fastCanonical, slowCanonical)
	}
	if !reflect.DeepEqual(fastM, slowM) {
		t.Fatalf("for %q the fast path gives %#v, the slow path %#v", raw, fastM, slowM)
	}
	return true
}

// FuzzFastPathMatchesSlowPath checks that whatever the fast path takes, it
// returns exactly what the slow path returns: decisions are made on it.
func FuzzFastPathMatchesSlowPath(f *testing.F) {
	for _, s := range []string{`{}`, `{"message":"hello"}`, `{"b":1,"a":-0.5e3,"c":true,"d":false,"e":null}`,
		`{"path":1,"PATH":2}`, "{\"source\":1,\"\u017fource\":2}", `{"file_path":1,"filePath":2}`, `{"a":"x\u0000"}`,
		"{\"a\":\"x\x00\"}", `{"q":"<&>"}`, "{\"q\":\"\u2028\"}", `{"n":01}`, `{"n":1.5E-07}`, ` { "a" : "b" } `,
		"{\"k\":\"caf\u00e9\",\"K\u00e9\":1}", `{"a":1}x`, `{"o":{"a":1}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		fastMatchesSlow(t, raw)
	})
}

// BenchmarkParse is Parse of the bench's echo arguments and of typical
// filesystem-tool arguments, by the fast path and by the slow path alone.
func BenchmarkParse(b *testing.B) {
	inputs := []struct{ name, raw string }{
		{"echo", `{"message":"hello from mcpwarden bench"}`},
		{"read_file", `{"path":"/srv/app/src/main.go","head":40,"tail":null}`},
	}
	for _, in := range inputs {
		raw := []byte(in.raw)
		b.Run(in.name+"/slow", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := parseSlow(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(in.name+"/Parse", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := Parse(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
