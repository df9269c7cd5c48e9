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
	// A number or a string, the ids JSON-RPC allows, is compact already
	// when nothing surrounds it, as a decoded id comes: Compact would
	// return it unchanged, at the cost of a scan and a buffer per call.
	if n := len(id); n > 0 && !compactable(id[0]) && !compactable(id[n-1]) {
		return string(id)
	}
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

// compactable says whether json.Compact may drop or rewrite what is
// around a value that starts or ends with c: white space, or the
// brackets of a value whose members may be spaced.
func compactable(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '{', '[', '}', ']':
		return true
	}
	return false
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
