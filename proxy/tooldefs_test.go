package proxy

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// schema2020 uses every kind of keyword of a JSON Schema 2020-12 schema:
// the dialect, identifiers, combinators, conditionals, the unevaluated
// and dependent keywords, formats, annotations and a vendor keyword.
const schema2020 = `{
 "$schema": "https://json-schema.org/draft/2020-12/schema",
 "$id": "urn:example:move",
 "$comment": "kept",
 "title": "Move",
 "type": "object",
 "properties": {
  "mode": {"type": "string", "enum": ["copy", "move"], "default": "copy", "deprecated": true},
  "n": {"type": "integer", "minimum": 1, "exclusiveMaximum": 10, "multipleOf": 1},
  "path": {"type": "string", "pattern": "^/srv/", "format": "uri-reference", "minLength": 2},
  "tags": {"type": "array", "prefixItems": [{"type": "string"}], "items": false, "contains": {"const": "x"}, "uniqueItems": true}
 },
 "required": ["mode"],
 "allOf": [{"if": {"properties": {"mode": {"const": "move"}}}, "then": {"required": ["path"]}, "else": {"not": {"required": ["n"]}}}],
 "anyOf": [{"required": ["mode"]}, {"required": ["path"]}],
 "oneOf": [{"type": "object"}],
 "dependentRequired": {"n": ["mode"]},
 "dependentSchemas": {"path": {"required": ["mode"]}},
 "propertyNames": {"maxLength": 8},
 "unevaluatedProperties": false,
 "$defs": {"name": {"$anchor": "name", "type": "string"}},
 "examples": [{"mode": "copy"}],
 "x-vendor": {"k": 1}
}`

// outputSchema2020 is an outputSchema with keywords the decoded form drops.
const outputSchema2020 = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"oneOf":[{"required":["ok"]}],"additionalProperties":false}`

// canonical is raw JSON with sorted keys and numbers as written.
func canonical(t *testing.T, raw []byte) string {
	t.Helper()
	var v any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestToolSchemaIsForwardedVerbatim(t *testing.T) {
	t.Parallel()
	rec := testkit.NewStandIn()
	rec.AddTool(mcp.Tool{Name: "move", RawInputSchema: json.RawMessage(schema2020), RawOutputSchema: json.RawMessage(outputSchema2020)},
		func(_ context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultStructured(map[string]any{"ok": true}, "moved"), nil
		})
	pool := upstream.Start(t.Context(), map[string]upstream.Spec{"up": {Transport: upstream.TransportHTTP, URL: rec.URL(t)}}, nil)
	t.Cleanup(func() { pool.Close() })
	if err := pool.Err("up"); err != nil {
		t.Fatal(err)
	}
	p, err := rules.Compile(rules.Spec{Global: allowAll, Servers: map[string]rules.ServerSpec{"up": {}}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Upstream: pool, Policy: p, Audit: audit.New(&memorySink{}, audit.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	adopt(t, srv)

	send := rawSession(t, srv)
	resp := send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	var list struct {
		Result struct {
			Tools []map[string]json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(mustJSON(t, resp)), &list); err != nil || len(list.Result.Tools) != 1 {
		t.Fatalf("tools/list = %v (%v), want one tool", resp, err)
	}
	tool := list.Result.Tools[0]
	if got, want := canonical(t, tool["inputSchema"]), canonical(t, []byte(schema2020)); got != want {
		t.Errorf("inputSchema forwarded as\n%s\nwant\n%s", got, want)
	}
	if got, want := canonical(t, tool["outputSchema"]), canonical(t, []byte(outputSchema2020)); got != want {
		t.Errorf("outputSchema forwarded as\n%s\nwant\n%s", got, want)
	}

	// The arguments are still checked against the schema: an integer
	// given as a string is refused before it reaches the upstream.
	bad := send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"up__move","arguments":{"mode":"copy","n":"3"}}}`)
	if res, _ := bad["result"].(map[string]any); res == nil || res["isError"] != true {
		t.Errorf("a call with n as a string = %v, want it refused", bad)
	}
	if n := len(rec.Arguments()); n != 0 {
		t.Errorf("the upstream was called %d times, want 0", n)
	}
	good := send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"up__move","arguments":{"mode":"copy","n":3}}}`)
	if res, _ := good["result"].(map[string]any); res == nil || res["isError"] == true {
		t.Errorf("a call as the schema declares = %v, want it forwarded", good)
	}
}
