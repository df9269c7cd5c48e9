package testkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
)

// Refusing wraps an MCP server's HTTP handler so that it answers a POST of
// method with HTTP 400 and the JSON-RPC error "method not found", and
// passes every other request to h. Refusing initialize, an mcp-go server
// (which speaks both protocol generations) becomes one of 2026-07-28
// alone; refusing server/discover, one of the initialize handshake alone.
func Refusing(h http.Handler, method mcp.MCPMethod) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(body, &msg) == nil && msg.Method == string(method) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found: %s"}}`, msg.ID, method)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}
