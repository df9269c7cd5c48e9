package audit

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// canary is stored under secret keys; it must never come out.
const canary = "CANARY-7f3b9q"

func FuzzRedact(f *testing.F) {
	f.Add([]byte(`{"path":"/srv/x","token":"abc"}`), "password", "hunter2")
	f.Add([]byte(`{"a":[{"b":{"Secret":"x"}},"y\nz"]}`), "X-API-KEY", "k")
	f.Add([]byte(`[1,2,3]`), "name", "bob")
	f.Add([]byte(`"just a string"`), "Authorization", "Bearer abcdefgh")
	f.Fuzz(func(t *testing.T, data []byte, key, value string) {
		if strings.Contains(string(data), canary) || strings.Contains(key, canary) || strings.Contains(value, canary) {
			t.Skip()
		}
		var v any
		_ = json.Unmarshal(data, &v)
		m, ok := v.(map[string]any)
		if !ok {
			m = map[string]any{"value": v}
		}
		m[key] = value
		nested := map[string]any{"password": canary, "keep": v}
		if defaultRedactor.IsSecretKey(key) {
			nested["list"] = []any{map[string]any{key: canary + value}}
		}
		m["nested"] = nested
		m["api_token"] = []any{canary}

		r := defaultRedactor
		out := r.Arguments(m)
		checkRedacted(t, r, out)
		b, err := json.Marshal(out)
		if err != nil {
			t.Fatalf("redacted arguments do not encode: %v", err)
		}
		if strings.Contains(string(b), canary) {
			t.Fatalf("output contains a secret value: %s", b)
		}
		s := r.String(value)
		limit := max(DefaultMaxStringLen, DefaultKeepPrefixLen+len(fmt.Sprintf(" <redacted: %d chars>", len([]rune(value)))))
		if strings.ContainsAny(s, "\r\n") || len([]rune(s)) > limit {
			t.Fatalf("String(%q) = %q: not cut", value, s)
		}
		_ = r.ReplaceAttr([]string{key}, slog.Any(key, m))
		_ = r.ReplaceAttr(nil, slog.String(key, value))
	})
}

// checkRedacted fails if a value under a secret key in v is not Redacted.
func checkRedacted(t *testing.T, r *Redactor, v any) {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if r.IsSecretKey(k) && e != Redacted {
				t.Fatalf("value under secret key %q is %v, want %s", k, e, Redacted)
			}
			checkRedacted(t, r, e)
		}
	case []any:
		for _, e := range x {
			checkRedacted(t, r, e)
		}
	case string:
		if strings.ContainsAny(x, "\r\n") {
			t.Fatalf("string %q keeps a line break", x)
		}
	}
}
