package proxy

import (
	"bytes"
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
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		out, scan := scanJSON(raw, true)
		if !scan.found() {
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
				if !strings.Contains(s[m.Start:m.End], resultMask) {
					t.Fatalf("%q redacted to %q, which still holds the %v %q", raw, out, m.Kind, s[m.Start:m.End])
				}
			}
		}
	})
}
