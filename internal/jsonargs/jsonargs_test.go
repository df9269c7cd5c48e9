package jsonargs

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpwarden/mcpwarden/internal/keyfold"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		raw     string
		want    string
		wantErr bool
	}{
		{"an empty input is an empty object", "", "{}", false},
		{"null is an empty object", " null ", "{}", false},
		{"keys are sorted and numbers kept as written", `{"b":1.50,"a":[1e3,"x",{"c":null}]}`, `{"a":[1e3,"x",{"c":null}],"b":1.50}`, false},
		{"a big integer keeps its digits", `{"n":12345678901234567890}`, `{"n":12345678901234567890}`, false},
		{"a duplicate key is rejected", `{"path":"/tmp/a","path":"/etc/passwd"}`, "", true},
		{"a duplicate key in a nested object is rejected", `{"o":{"k":1,"k":2}}`, "", true},
		{"an array is not arguments", `[1,2]`, "", true},
		{"a string is not arguments", `"x"`, "", true},
		{"trailing data is rejected", `{"a":1}{"a":2}`, "", true},
		{"invalid UTF-8 is rejected", "{\"a\":\"\xff\"}", "", true},
		{"a truncated object is rejected", `{"a":`, "", true},
		{"keys equal but for case are rejected", `{"path":"/tmp/a","PATH":"/etc/passwd"}`, "", true},
		{"a long s U+017F folding to s is rejected", `{"source":"/srv/a","\u017fource":"/etc/shadow"}`, "", true},
		{"a KELVIN SIGN folding to K is rejected", `{"Keys":1,"\u212aeys":2}`, "", true},
		{"a key differing by an underscore is rejected", `{"file_path":"/srv/a","filePath":"/etc/passwd"}`, "", true},
		{"folded keys in a nested object are rejected", `{"o":[{"Path":1,"pATH":2}]}`, "", true},
		{"the same key at two levels is accepted", `{"path":{"PATH":1}}`, `{"path":{"PATH":1}}`, false},
		{"a lone upper-case key is accepted", `{"PATH":"/x"}`, `{"PATH":"/x"}`, false},
		{"a NUL in a string is rejected", `{"path":"/srv/a\u0000/etc/passwd"}`, "", true},
		{"a NUL in a nested string is rejected", `{"paths":["/srv/a","x\u0000"]}`, "", true},
		{"a NUL in a key is rejected", `{"pa\u0000th":"/x"}`, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, got, err := Parse([]byte(tt.raw))
			if (err != nil) != tt.wantErr {
				t.Fatalf("Parse(%q) error = %v, want error %v", tt.raw, err, tt.wantErr)
			}
			if string(got) != tt.want {
				t.Errorf("Parse(%q) = %s, want %s", tt.raw, got, tt.want)
			}
		})
	}
}

func TestDeepNestingIsRejected(t *testing.T) {
	t.Parallel()
	raw := `{"a":`
	for range MaxDepth + 5 {
		raw += "["
	}
	if _, _, err := Parse([]byte(raw)); err == nil {
		t.Fatal("Parse accepted arguments nested deeper than MaxDepth")
	}
}

func TestFoldedKeyErrorNamesBothKeys(t *testing.T) {
	t.Parallel()
	_, _, err := Parse([]byte(`{"source":"a","\u017fource":"b"}`))
	if err == nil || !strings.Contains(err.Error(), `"source"`) || !strings.Contains(err.Error(), "\"\u017fource\"") {
		t.Fatalf("Parse error = %v, want one naming both keys", err)
	}
}

// FuzzParse checks that whatever Parse accepts, it forwards an equivalent
// canonical form: parsing the canonical bytes again gives the same bytes.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"path":"/etc/passwd","x":[1,{"y":null}]}`, `{"a":1,"a":2}`, `[]`, `{"a":"\u00e9"}`,
		`{"path":1,"PATH":2}`, `{"source":1,"\u017fource":2}`, `{"a":"x\u0000"}`, `{"o":{"file_path":1,"filePath":2}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, canonical, err := Parse(raw)
		if err != nil {
			return
		}
		if !json.Valid(canonical) {
			t.Fatalf("canonical form %q is not valid JSON", canonical)
		}
		m2, again, err := Parse(canonical)
		if err != nil {
			t.Fatalf("canonical form %q does not parse: %v", canonical, err)
		}
		if string(again) != string(canonical) {
			t.Fatalf("canonical form is not stable: %q then %q", canonical, again)
		}
		if len(m) != len(m2) {
			t.Fatalf("key count changed: %d then %d", len(m), len(m2))
		}
		checkAccepted(t, m)
	})
}

// checkAccepted fails if v, accepted by Parse, holds a NUL, invalid UTF-8
// or two keys at one level that keyfold treats as one name.
func checkAccepted(t *testing.T, v any) {
	t.Helper()
	switch v := v.(type) {
	case map[string]any:
		seen := map[string]string{}
		for k, e := range v {
			if strings.ContainsRune(k, 0) || !utf8.ValidString(k) {
				t.Fatalf("accepted key %q", k)
			}
			if other, ok := seen[keyfold.Key(k)]; ok {
				t.Fatalf("accepted keys %q and %q", other, k)
			}
			seen[keyfold.Key(k)] = k
			checkAccepted(t, e)
		}
	case []any:
		for _, e := range v {
			checkAccepted(t, e)
		}
	case string:
		if strings.ContainsRune(v, 0) || !utf8.ValidString(v) {
			t.Fatalf("accepted string %q", v)
		}
	}
}

func TestNULInPathIsRefused(t *testing.T) {
	t.Parallel()
	// Cleaned, /srv/app/a\x00/../../../etc/passwd is /etc/passwd; a
	// C-string server opens /srv/app/a. Neither reading is decided: the call
	// is refused.
	for _, raw := range []string{
		`{"path":"/srv/app/a\u0000/../../../etc/passwd"}`,
		`{"path":"/etc/passwd\u0000.txt"}`,
		`{"paths":["/srv/app/ok","/etc/shadow\u0000"]}`,
	} {
		if _, _, err := Parse([]byte(raw)); err == nil || !strings.Contains(err.Error(), "NUL") {
			t.Errorf("Parse(%s) error = %v, want one naming the NUL", raw, err)
		}
	}
}
