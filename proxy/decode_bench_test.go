package proxy

import (
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/argschema"
	"github.com/mcpwarden/mcpwarden/internal/jsonargs"
)

// echoCall is a tools/call message as the bench's echo workload sends it.
var echoCall = []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"everything__echo","arguments":{"message":"hello from the load client, call 7"},"_meta":{"progressToken":7}}}`)

// BenchmarkRequestDecode prices each decode a tools/call message goes
// through in the proxy: gateRequest's (method, name, uri), mcp-go's
// (the request, its arguments into a map the proxy does not use) and
// jsonargs' strict parse of the arguments the decision is made on, and
// argschema's check of their types, which follows it.
func BenchmarkRequestDecode(b *testing.B) {
	b.Run("gateRequest", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var req gateFields
			if err := json.Unmarshal(echoCall, &req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("mcp-go request", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var req struct {
				JSONRPC string             `json:"jsonrpc"`
				ID      any                `json:"id"`
				Method  string             `json:"method"`
				Params  mcp.CallToolParams `json:"params"`
			}
			if err := json.Unmarshal(echoCall, &req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsonargs", func(b *testing.B) {
		b.ReportAllocs()
		raw := []byte(`{"message":"hello from the load client, call 7"}`)
		for b.Loop() {
			if _, _, err := jsonargs.Parse(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	// What the type check adds to jsonargs on the same arguments.
	b.Run("argschema", func(b *testing.B) {
		b.ReportAllocs()
		schema, err := argschema.Compile([]byte(`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`))
		if err != nil {
			b.Fatal(err)
		}
		args, _, err := jsonargs.Parse([]byte(`{"message":"hello from the load client, call 7"}`))
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if err := schema.Check(args); err != nil {
				b.Fatal(err)
			}
		}
	})
}
