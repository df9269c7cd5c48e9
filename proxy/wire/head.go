package wire

import (
	"bytes"
	"encoding/json"
)

// A Head is what a transport reads of a JSON-RPC message to route it: a
// request (method and id), a notification (method, no id) or a response
// to a request the server sent the client (id, result or error). Decoding
// only these leaves the rest of the message unread until mcp-go handles it.
type Head struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// IDKey is a request id as a map key: its JSON, compacted, so that the
// id a notifications/cancelled names finds the request however either
// was spaced.
func IDKey(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

// CancelledID is the request a notifications/cancelled msg names, as an
// IDKey; ok is false when it names none.
func CancelledID(msg []byte) (key string, ok bool) {
	var n struct {
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &n) != nil || n.Params.RequestID == nil {
		return "", false
	}
	return IDKey(n.Params.RequestID), true
}
