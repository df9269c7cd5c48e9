package wire

import (
	"bytes"
	"encoding/json"
	"testing"
)

// compacted is what IDKey is: the id compacted, or as it is when it is
// not JSON.
func compacted(id []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

func TestIDKeyIsTheCompactedID(t *testing.T) {
	for _, id := range []string{
		`1`, `-1.5e3`, `"a b"`, `"\u2028<&>"`, `null`, `true`,
		` 1`, "1\n", `"x" `, `{ "a" : 1 }`, `[1, 2]`, `{}`, `"`, ``, `1 2`,
	} {
		if got, want := IDKey(json.RawMessage(id)), compacted([]byte(id)); got != want {
			t.Errorf("IDKey(%q) = %q, want %q", id, got, want)
		}
	}
}

// FuzzIDKeyIsTheCompactedID holds IDKey's shortcut to json.Compact on any
// bytes.
func FuzzIDKeyIsTheCompactedID(f *testing.F) {
	f.Add([]byte(`"a b"`))
	f.Add([]byte(` {"a": [1, 2]} `))
	f.Fuzz(func(t *testing.T, id []byte) {
		if got, want := IDKey(id), compacted(id); got != want {
			t.Fatalf("IDKey(%q) = %q, want %q", id, got, want)
		}
	})
}
