package secrets

import (
	"encoding/base64"
	"math/rand/v2"
	"strings"
	"testing"
)

// benchInputs are 1 MiB texts of the kinds tool results carry, none holding
// a credential: the bench upstream's payload, prose and code, JSON, base64
// and text with non-ASCII characters.
func benchInputs() []struct{ name, text string } {
	const size = 1 << 20
	fill := func(unit string) string { return strings.Repeat(unit, size/len(unit)+1)[:size] }
	rng := rand.New(rand.NewPCG(1, 2))
	bin := make([]byte, size*3/4)
	for i := range bin {
		bin[i] = byte(rng.Uint32())
	}
	prose := "The high-level design keeps each component small; though the right thing is often the simplest, " +
		"we rely on https://example.com/docs/guide?page=2&sort=asc for details. They ask whether a bearer of news " +
		"should see it.\nfunc (s *Server) Handle(ctx context.Context, req Request) error {\n\tx := s.cfg.Timeout * 2\n" +
		"\tif err := s.check(ctx, req); err != nil {\n\t\treturn fmt.Errorf(\"checking %q: %w\", req.Name, err)\n\t}\n" +
		"\treturn nil // skip_auth=false, eyes on the task-list\n}\n"
	jsonText := `{"id":1234,"name":"widget","url":"https://api.example.com/v1/items/1234","tags":["alpha","beta"],` +
		`"owner":{"login":"octocat","html_url":"https://github.com/octocat"},"description":"A thing; see \"docs\" at /x?y=z",` +
		`"created_at":"2026-12-04T10:00:00Z","size":42,"skills":["ghost","npm"],"hash":"e3b0c44298fc1c149afbf4c8996fb924"}` + "\n"
	nonASCII := "Größe ändern: 日本語のテキスト、emoji 😀 und Straße — naïve café, Ǆ ſ K … αβγ = δ; "
	return []struct{ name, text string }{
		{"payload", fill("abcdefghijklmnopqrstuvwxyz012345")},
		{"abcdef", fill("abcdef")},
		{"prose+code", fill(prose)},
		{"json", fill(jsonText)},
		{"base64", base64.StdEncoding.EncodeToString(bin)[:size]},
		{"base64url", base64.RawURLEncoding.EncodeToString(bin)[:size]},
		{"binary", string(bin)},
		{"non-ASCII", fill(nonASCII)},
	}
}

// BenchmarkFind1MiB is the scan of a large harmless result (issue 21).
func BenchmarkFind1MiB(b *testing.B) {
	for _, in := range benchInputs() {
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(in.text)))
			b.ReportAllocs()
			for b.Loop() {
				if len(Find(in.text)) != 0 {
					b.Fatal("found a credential")
				}
			}
		})
	}
}

// BenchmarkRedact1MiBWithOneSecret redacts one credential in a large text.
func BenchmarkRedact1MiBWithOneSecret(b *testing.B) {
	for _, in := range benchInputs()[:3] {
		text := in.text[:len(in.text)/2] + " Bearer abcdef123456 " + in.text[len(in.text)/2:]
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				if Redact(text, "<m>") == text {
					b.Fatal("nothing redacted")
				}
			}
		})
	}
}
