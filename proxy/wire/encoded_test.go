package wire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestResultResponseEncodesAsMcpGo: a result encoded by ResultResponse
// decodes to what mcp-go's encoding of the same response decodes to, and
// is one line.
func TestResultResponseEncodesAsMcpGo(t *testing.T) {
	raw := func(items ...string) []mcp.Content {
		out := []mcp.Content{}
		for _, it := range items {
			out = append(out, RawContent{Raw: json.RawMessage(it)})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		id   string
		res  *mcp.CallToolResult
	}{
		{"text", `1`, &mcp.CallToolResult{Content: raw(`{"type":"text","text":"hi"}`)}},
		{"no content", `"a"`, &mcp.CallToolResult{Content: raw()}},
		{"error", `2`, &mcp.CallToolResult{Content: raw(`{"type":"text","text":"<b>&</b>"}`), IsError: true}},
		{"structured", `3`, &mcp.CallToolResult{Content: raw(`{"type":"text","text":"x"}`), RawStructuredContent: json.RawMessage(`{"n":1}`)}},
		{"meta", `4`, &mcp.CallToolResult{Result: mcp.Result{Meta: &mcp.Meta{AdditionalFields: map[string]any{"k": "v"}}}, Content: raw(`{"type":"text","text":"x"}`)}},
		{"spaced over lines", `5`, &mcp.CallToolResult{Content: raw("{\n  \"type\": \"text\",\r\n  \"text\": \"a\\nb\"\n}", `{"type":"image","data":"AA==","mimeType":"image/png"}`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ResultResponse(json.RawMessage(tc.id), tc.res)
			if !ok {
				t.Fatal("not encoded")
			}
			want, err := json.Marshal(mcp.NewJSONRPCResultResponse(mcp.NewRequestId(json.RawMessage(tc.id)), tc.res))
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatalf("%s: %v", got, err)
			}
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("got  %s\nwant %s", got, want)
			}
			if bytes.ContainsAny(got, "\r\n") {
				t.Errorf("%q spans lines", got)
			}
		})
	}
}

// TestResultResponseLeavesOtherResultsToMcpGo: what it cannot encode as
// mcp-go does, it does not encode.
func TestResultResponseLeavesOtherResultsToMcpGo(t *testing.T) {
	for name, res := range map[string]*mcp.CallToolResult{
		"typed item":          mcp.NewToolResultText("x"),
		"input requests":      {Content: []mcp.Content{RawContent{Raw: json.RawMessage(`{}`)}}, MultiRoundTripResult: mcp.MultiRoundTripResult{RequestState: "s"}},
		"structured, not raw": {Content: []mcp.Content{RawContent{Raw: json.RawMessage(`{}`)}}, StructuredContent: map[string]any{"a": 1}},
	} {
		if _, ok := ResultResponse(json.RawMessage(`1`), res); ok {
			t.Errorf("%s: encoded", name)
		}
	}
}
