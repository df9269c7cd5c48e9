package proxy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/proxy/wire"
)

func TestDecodeResultForwardsTheUpstreamsBytes(t *testing.T) {
	raw := json.RawMessage(`{"_meta":{"trace":"t-1"},"content":[{"type":"text","text":"a\u00e9\ud83d\ude00","annotations":{"priority":0.5}},{"type":"image","data":"AA==","mimeType":"image/png"},{"type":"future","x":12345678901234567890}],"structuredContent":{"n":12345678901234567890},"isError":true}`)
	res, preview, err := decodeResult(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || preview != "aé😀" {
		t.Errorf("isError %v, preview %q", res.IsError, preview)
	}
	got, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{
		`{"type":"text","text":"a\u00e9\ud83d\ude00","annotations":{"priority":0.5}}`, // as sent, escapes kept
		`{"type":"future","x":12345678901234567890}`,                                  // unknown types too
		`"structuredContent":{"n":12345678901234567890}`,
		`"isError":true`,
		`"_meta":{"trace":"t-1"}`,
	} {
		if !strings.Contains(string(got), part) {
			t.Errorf("forwarded result lacks %s:\n%s", part, got)
		}
	}
}

// decodeResult checks only the result's structure; a content item that is
// not valid JSON inside fails when the server encodes the response, so the
// client gets an error, never broken JSON.
func TestInvalidContentFailsWhenEncoded(t *testing.T) {
	for _, item := range []string{`{"type":"text","text":tru}`, `{"type":"text","text":"a` + "" + `"}`, `{"type":"text","text":"\q"}`} {
		res, _, err := decodeResult(json.RawMessage(`{"content":[` + item + `]}`))
		if err != nil {
			continue // refused already: as good
		}
		if b, err := json.Marshal(res); err == nil {
			t.Errorf("item %q encoded as %s", item, b)
		}
	}
}

func TestDecodeResultRefusesWhatIsNoResult(t *testing.T) {
	for _, raw := range []string{`[]`, `"text"`, `{"content":{}}`, `{"content":[1,}`, `{"isError":"yes"}`, `{"_meta":[]}`} {
		if _, _, err := decodeResult(json.RawMessage(raw)); err == nil {
			t.Errorf("decodeResult(%s) succeeded", raw)
		}
	}
}

func TestTextPreview(t *testing.T) {
	long := strings.Repeat("é", 150) // 300 bytes
	tests := []struct {
		name  string
		items []string
		want  string
	}{
		{"none", nil, ""},
		{"first text item", []string{`{"type":"image","data":"AA=="}`, `{"type":"text","text":"hi"}`, `{"type":"text","text":"no"}`}, "hi"},
		{"cut at a character", []string{`{"type":"text","text":"` + long + `"}`}, strings.Repeat("é", 100)},
		{"escaped", []string{`{"type":"text","text":"` + strings.Repeat(`\u00e9`, 150) + `"}`}, strings.Repeat("é", 100)},
		{"no text", []string{`{"type":"resource","resource":{"uri":"file:///x","text":"body"}}`}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items := make([][]byte, len(tt.items))
			for i, s := range tt.items {
				items[i] = []byte(s)
			}
			if got := textPreview(items); got != tt.want {
				t.Errorf("textPreview = %q, want %q", got, tt.want)
			}
		})
	}
}

// FuzzJSONStringPrefix checks that the prefix decodes to the start of the
// string, at least n bytes of it, whatever the string and its escaping.
func FuzzJSONStringPrefix(f *testing.F) {
	for _, s := range []string{"", "a", "é😀x", "line\nbreak\t\"quoted\"", strings.Repeat("ab", 300), "\u2028\u2029<>&"} {
		f.Add(s, 10, false)
		f.Add(s, 1, true)
	}
	f.Fuzz(func(t *testing.T, s string, n int, escapeAll bool) {
		if n < 1 || n > 1000 || !utf8.ValidString(s) {
			return
		}
		lit, _ := json.Marshal(s)
		if escapeAll {
			lit = escapeEverything(s)
		}
		var got string
		if err := json.Unmarshal(jsonStringPrefix(lit, n), &got); err != nil {
			t.Fatalf("prefix of %s does not decode: %v", lit, err)
		}
		if !strings.HasPrefix(s, got) {
			t.Fatalf("prefix %q is not a prefix of %q", got, s)
		}
		if len(got) < min(n, len(s)) {
			t.Fatalf("prefix %q has %d bytes, want at least %d", got, len(got), min(n, len(s)))
		}
	})
}

// escapeEverything encodes s as a JSON string with every character a
// \u escape (surrogate pairs beyond the BMP).
func escapeEverything(s string) []byte {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r > 0xFFFF {
			r -= 0x10000
			b.WriteString(hex4(0xD800 + r>>10))
			b.WriteString(hex4(0xDC00 + r&0x3FF))
			continue
		}
		b.WriteString(hex4(r))
	}
	b.WriteByte('"')
	return []byte(b.String())
}

func hex4(r rune) string {
	const digits = "0123456789ABCDEF"
	return `\u` + string([]byte{digits[r>>12&15], digits[r>>8&15], digits[r>>4&15], digits[r&15]})
}

var _ mcp.Content = wire.RawContent{} // a rawContent is a content item

// BenchmarkForwardResult compares forwarding a result as its bytes
// (decodeResult, then the server's encoding) with the decode and encode
// round trip it replaced (mcp-go's client decoding, then the same
// encoding): run it and compare the raw and decoded lines of each size.
func BenchmarkForwardResult(b *testing.B) {
	for _, size := range []int{1 << 10, 1 << 20} {
		raw, err := json.Marshal(mcp.NewToolResultText(strings.Repeat("abcdefghijklmnopqrstuvwxyz01234\n", size/32)))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%dKiB/decoded", size>>10), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				msg := json.RawMessage(raw)
				res, err := mcp.ParseCallToolResult(&msg)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := json.Marshal(res); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("%dKiB/raw", size>>10), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, _, err := decodeResult(raw)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := json.Marshal(res); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzTextPreviewIsTheStartOfTheText holds textPreview to the text of the
// first text item decoded whole by encoding/json, cut at previewLen bytes
// on a character boundary, for any two items of valid JSON.
func FuzzTextPreviewIsTheStartOfTheText(f *testing.F) {
	f.Add([]byte(`{"type":"image","data":"AA=="}`), []byte(`{"type":"text","text":"hi"}`))
	f.Add([]byte(`{"type":"text","text":"`+strings.Repeat(`\u00e9`, 150)+`","type":"text"}`), []byte(`{}`))
	f.Add([]byte(`{"type":null,"text":"a"}`), []byte(`{"type":"text","text":5}`))
	f.Add([]byte(`{"TYPE":"text","text":"a"}`), []byte(`{"type":"text","text":"b\ud800c"}`))
	f.Add([]byte(`{"type":"text","text":null}`), []byte(`{"type":"text","text":"x"}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if !json.Valid(a) || !json.Valid(b) {
			return
		}
		want := ""
		for _, item := range [][]byte{a, b} {
			var m map[string]json.RawMessage
			var typ, text string
			if json.Unmarshal(item, &m) != nil || json.Unmarshal(m["type"], &typ) != nil && m["type"] != nil ||
				typ != "text" || len(m["text"]) == 0 || m["text"][0] != '"' || json.Unmarshal(m["text"], &text) != nil {
				continue
			}
			if len(text) > previewLen {
				cut := previewLen
				for cut > 0 && !utf8.RuneStart(text[cut]) {
					cut--
				}
				text = text[:cut]
			}
			want = text
			break
		}
		if got := textPreview([][]byte{a, b}); got != want {
			t.Fatalf("textPreview = %q, want %q, of %s and %s", got, want, a, b)
		}
	})
}
