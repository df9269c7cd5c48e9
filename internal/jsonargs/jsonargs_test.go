package jsonargs

import (
	"encoding/json"
	"testing"
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

// FuzzParse checks that whatever Parse accepts, it forwards an equivalent
// canonical form: parsing the canonical bytes again gives the same bytes.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"path":"/etc/passwd","x":[1,{"y":null}]}`, `{"a":1,"a":2}`, `[]`, `{"a":"\u00e9"}`} {
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
	})
}
