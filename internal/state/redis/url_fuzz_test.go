package redis

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/config"
)

// FuzzConfigStateURL checks that config validation and the store read a
// state URL alike: a URL that validate accepts is one the store can use
// (never "validate says yes, serve says no"), and the validation error
// never shows a password written in the URL.
func FuzzConfigStateURL(f *testing.F) {
	for _, u := range []string{
		"redis://127.0.0.1:6379", "redis://redis.mcp.svc:6379/2", "rediss://valkey:6380",
		"unix:///run/redis.sock", "redis://:hunter2@redis:6379", "redis://user@h:1/x",
		"http://redis:6379", "redis://", "redis://h:notaport", "redis://[::1]:6379/15?dial_timeout=3s",
		"redis://h/99999999999999999999", "redis://h:6379?protocol=x",
	} {
		f.Add(u)
	}
	f.Fuzz(func(t *testing.T, u string) {
		doc, err := json.Marshal(map[string]any{
			"servers": map[string]any{"fs": map[string]any{"command": "x"}},
			"state":   map[string]any{"url": u},
		})
		if err != nil {
			t.Skip() // not valid UTF-8 for JSON: the loader never sees it either
		}
		_, cerr := config.Parse(doc, ".json", "/cfg", nil)
		if cerr != nil {
			if leaked := secretIn(u); leaked != "" && strings.Contains(cerr.Error(), leaked) {
				t.Fatalf("the error for %q shows %q: %v", u, leaked, cerr)
			}
			return
		}
		if _, err := clientOptions(Options{URL: u}); err != nil {
			t.Fatalf("config accepted state.url %q, which the store refuses: %v", u, err)
		}
	})
}

// secretIn is what an error about u must not show: the password of a URL
// that parses (unless the URL shows the same text elsewhere), or the whole
// text of one that does not (which may hold a password no parser found).
func secretIn(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		if len(u) < 6 {
			return ""
		}
		return u
	}
	if pw, ok := p.User.Password(); ok && len(pw) >= 4 && !strings.Contains(p.Redacted(), pw) {
		return pw
	}
	// A password also written elsewhere in the URL (the same as its user
	// name, say) is shown by the rest of it, which the error may name.
	return ""
}
