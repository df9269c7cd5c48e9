package proxy

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/rawjson"
	"github.com/mcpwarden/mcpwarden/proxy/wire"
)

// previewLen bounds the result text kept in a result event before redaction.
const previewLen = 200

// decodeResult splits raw, the result object an upstream sent, into the
// result handed to the client and the audit's preview of it. Each content
// item and the structured content are kept as the upstream encoded them:
// they are forwarded without being decoded and encoded again, and found
// without decoding the strings inside them. Unknown members are dropped,
// as mcp-go's own decoding drops them; where a member repeats, the last
// one counts, as in encoding/json.
func decodeResult(raw json.RawMessage) (*mcp.CallToolResult, string, error) {
	res := &mcp.CallToolResult{Content: []mcp.Content{}}
	var items [][]byte
	err := rawjson.Object(raw, func(key string, v []byte) error {
		switch key {
		case "_meta":
			res.Meta = nil
			if !rawjson.IsNull(v) {
				res.Meta = &mcp.Meta{}
				return json.Unmarshal(v, res.Meta)
			}
		case "content":
			res.Content, items = res.Content[:0], items[:0]
			if rawjson.IsNull(v) {
				return nil
			}
			return rawjson.Array(v, func(item []byte) error {
				res.Content = append(res.Content, wire.RawContent{Raw: item})
				items = append(items, item)
				return nil
			})
		case "structuredContent":
			res.RawStructuredContent = nil
			if !rawjson.IsNull(v) {
				res.RawStructuredContent = v
			}
		case "isError":
			return json.Unmarshal(v, &res.IsError)
		}
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("the upstream's result is not a tools/call result: %w", err)
	}
	return res, textPreview(items), nil
}

// textPreview is the start of the text of the first text item, at most
// previewLen bytes cut at a character boundary. A long text is not decoded
// whole: only as much of its JSON string as the preview can need.
func textPreview(items [][]byte) string {
	for _, item := range items {
		var typ string
		var lit []byte
		err := rawjson.Object(item, func(key string, v []byte) error {
			switch key {
			case "type":
				return rawjson.ReadString(v, &typ)
			case "text":
				lit = v
			}
			return nil
		})
		if err != nil || typ != "text" || len(lit) < 2 || lit[0] != '"' {
			continue
		}
		text, err := rawjson.String(jsonStringPrefix(lit, previewLen))
		if err != nil {
			return ""
		}
		if len(text) > previewLen {
			cut := previewLen
			for cut > 0 && !utf8.RuneStart(text[cut]) {
				cut--
			}
			text = text[:cut]
		}
		return text
	}
	return ""
}

// jsonStringPrefix returns a JSON string literal holding at least the first
// n bytes of the string s encodes (all of it when it is shorter), cut
// between characters: never inside an escape sequence, a UTF-8 sequence or
// a surrogate pair. s must be a valid JSON string literal.
func jsonStringPrefix(s []byte, n int) []byte {
	// Every decoded byte takes at least one byte of s, and an escape
	// decodes to at least one byte, so n characters of s, escapes counted
	// whole, decode to at least n bytes.
	i, chars := 1, 0
	for i < len(s)-1 && chars < n {
		if s[i] == '\\' {
			if s[i+1] == 'u' {
				i += 6
				// A high surrogate's low half follows it: keep them together.
				if i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' && isHighSurrogate(s[i-4:i]) {
					i += 6
				}
			} else {
				i += 2
			}
		} else {
			i++
		}
		chars++
	}
	for i < len(s)-1 && !utf8.RuneStart(s[i]) { // the rest of a character
		i++
	}
	if i >= len(s)-1 {
		return s
	}
	out := make([]byte, 0, i+1)
	return append(append(out, s[:i]...), '"')
}

// isHighSurrogate reports whether the four hex digits h are a UTF-16 high
// surrogate (D800–DBFF).
func isHighSurrogate(h []byte) bool {
	return (h[0] == 'd' || h[0] == 'D') && (h[1] == '8' || h[1] == '9' || h[1] == 'a' || h[1] == 'A' || h[1] == 'b' || h[1] == 'B')
}
