package scan

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/secrets"
)

// FuzzScanJSON checks that redacting a valid JSON result leaves valid JSON
// in which every credential a second scan finds is the mask (a URL whose
// password is the mask still looks like one), and that a result with nothing to
// redact is left as it is.
func FuzzScanJSON(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hello"}]}`,
		`{"content":[{"type":"text","text":"key AKIAIOSFODNN7EXAMPLE"}]}`,
		`{"structuredContent":{"ghp_abcdefghijklmnopqrstuvwxyz0123456789":"\u0067hp_abcdefghijklmnopqrstuvwxyz0123456789"}}`,
		`["-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----", "Bearer abcdefgh", "https://u:p@host/"]`,
		`"\\\"\u00e9\ud83d\ude00"`,
		`{"content":[{"type":"resource","resource":{"uri":"file:///k","blob":"QUtJQUlPU0ZPRE5ON0VYQU1QTEUK"}}]}`,
		`{"blob" : "Z2hwX2FiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6MDEyMzQ1Njc4OQ","x":{"blob":["blob"]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		out, scan := JSON(raw, true)
		if !scan.Found() {
			if !bytes.Equal(out, raw) {
				t.Fatalf("nothing found, yet %q became %q", raw, out)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("%q redacted to invalid JSON %q", raw, out)
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			s, ok := tok.(string)
			if !ok {
				continue
			}
			for _, m := range secrets.Find(s) {
				if !strings.Contains(s[m.Start:m.End], Mask) {
					t.Fatalf("%q redacted to %q, which still holds the %v %q", raw, out, m.Kind, s[m.Start:m.End])
				}
			}
		}
		var v any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("%q redacted to %q: %v", raw, out, err)
		}
		eachBlob(v, func(blob string) {
			data, err := base64.StdEncoding.DecodeString(blob)
			if err != nil {
				return
			}
			for _, m := range secrets.Find(string(data)) {
				if !strings.Contains(string(data[m.Start:m.End]), Mask) {
					t.Fatalf("%q redacted to %q, whose blob still holds the %v %q", raw, out, m.Kind, data[m.Start:m.End])
				}
			}
		})
	})
}

// eachBlob calls f with every string value of a `blob` member in v.
func eachBlob(v any, f func(string)) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if s, ok := e.(string); ok && k == "blob" {
				f(s)
			}
			eachBlob(e, f)
		}
	case []any:
		for _, e := range t {
			eachBlob(e, f)
		}
	}
}
