package wire

import (
	"bytes"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// Encoded is a JSON-RPC message already encoded, which the transports
// write as it is. It encodes as itself, so that whatever encodes it
// still gets the message.
type Encoded []byte

func (e Encoded) MarshalJSON() ([]byte, error) { return e, nil }

// ResultResponse encodes the response with id to a tools/call whose
// result is res, as mcp-go's encoder would give it but for the content
// items, which are written as the upstream sent them (RawContent) rather
// than compacted and escaped again: mcp-go's CallToolResult.MarshalJSON
// builds a map, encodes it, and the response encoder copies and compacts
// that again, which cost a tenth of a call's CPU. ok is false for a
// result it does not encode (an item that is not RawContent, a field of
// 2026-07-28 set); the caller then has mcp-go encode it.
func ResultResponse(id json.RawMessage, res *mcp.CallToolResult) (msg Encoded, ok bool) {
	if res.ResultType != "" || len(res.InputRequests) > 0 || res.RequestState != "" ||
		res.StructuredContent != nil && len(res.RawStructuredContent) == 0 {
		return nil, false
	}
	size := 64 + len(id) + len(res.RawStructuredContent)
	for _, c := range res.Content {
		rc, ok := c.(RawContent)
		if !ok {
			return nil, false
		}
		size += len(rc.Raw) + 1
	}
	b := make([]byte, 0, size)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":{`...)
	// The members in the order mcp-go's map gives them: sorted.
	if res.Meta != nil {
		meta, err := json.Marshal(res.Meta)
		if err != nil {
			return nil, false
		}
		b = append(append(b, `"_meta":`...), meta...)
		b = append(b, ',')
	}
	b = append(b, `"content":[`...)
	for i, c := range res.Content {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, c.(RawContent).Raw...)
	}
	b = append(b, ']')
	if res.IsError {
		b = append(b, `,"isError":true`...)
	}
	if len(res.RawStructuredContent) > 0 {
		b = append(append(b, `,"structuredContent":`...), res.RawStructuredContent...)
	}
	b = append(b, "}}"...)
	if bytes.ContainsAny(b, "\r\n") {
		// An upstream's result may be spaced over lines; a stdio message
		// is one line.
		var compact bytes.Buffer
		if json.Compact(&compact, b) != nil {
			return nil, false
		}
		b = compact.Bytes()
	}
	return b, true
}
