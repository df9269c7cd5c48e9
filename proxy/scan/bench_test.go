package scan

import (
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// BenchmarkScanJSON1MiB is the scan of a large harmless tool result
// (issue 21): the bench upstream's payload, prose and code (newlines and
// quotes escaped), a JSON document as text, a base64 blob and text with
// non-ASCII characters.
func BenchmarkScanJSON1MiB(b *testing.B) {
	const size = 1 << 20
	fill := func(unit string) string { return strings.Repeat(unit, size/len(unit)+1)[:size] }
	rng := rand.New(rand.NewPCG(1, 2))
	bin := make([]byte, size*3/4)
	for i := range bin {
		bin[i] = byte(rng.Uint32())
	}
	text := func(s string) []byte {
		raw, err := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}})
		if err != nil {
			b.Fatal(err)
		}
		return raw
	}
	prose := "The high-level design keeps each component small; though the right thing is often the simplest, " +
		"we rely on https://example.com/docs/guide?page=2&sort=asc for details.\nfunc (s *Server) Handle() error {\n" +
		"\treturn fmt.Errorf(\"checking %q: %w\", req.Name, err) // eyes on the task-list\n}\n"
	var items []any
	for i := 0; len(items)*120 < size; i++ {
		items = append(items, map[string]any{"id": i, "name": "widget", "url": "https://api.example.com/v1/items", "tags": []string{"alpha", "ghost"}})
	}
	structured, _ := json.Marshal(map[string]any{"structuredContent": map[string]any{"items": items}})
	blob, _ := json.Marshal(map[string]any{"contents": []any{map[string]any{"uri": "file:///x", "blob": base64.StdEncoding.EncodeToString(bin)}}})
	inputs := []struct {
		name string
		raw  []byte
	}{
		{"payload", text(fill("abcdefghijklmnopqrstuvwxyz012345"))},
		{"prose+code", text(fill(prose))},
		{"structured", structured},
		{"json-as-text", text(string(structured))},
		{"image-data", text(base64.StdEncoding.EncodeToString(bin))},
		{"blob", blob},
		{"non-ASCII", text(fill("Größe ändern: 日本語のテキスト、emoji 😀 und Straße — naïve café; "))},
	}
	for _, in := range inputs {
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(in.raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, scan := JSON(in.raw, true); scan.Found() {
					b.Fatal("found a credential")
				}
			}
		})
	}
}
