package wire

import "encoding/json"

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
