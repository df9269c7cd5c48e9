package upstream

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// FuzzListedSchemasAreTheUpstreamsOwn checks what listTools takes from a
// raw tools/list page: every schema it keeps is the JSON object the page
// gives that tool, byte for byte, and a page encoding/json cannot read
// gives nothing.
func FuzzListedSchemasAreTheUpstreamsOwn(f *testing.F) {
	f.Add([]byte(`{"tools":[{"name":"a","inputSchema":{"type":"object","allOf":[{"not":{}}]},"outputSchema":{"$schema":"x"}}]}`))
	f.Add([]byte(`{"tools":[{"name":"a","inputSchema":null},{"name":"a","inputSchema":{"type":"object"}}]}`))
	f.Add([]byte(`{"tools":[{"name":"b","inputSchema":[1]}],"nextCursor":"c"}`))
	f.Add([]byte(`{"tools":{}}`))
	f.Fuzz(func(t *testing.T, page []byte) {
		got := (&listPages{pages: []json.RawMessage{page}}).schemas()
		var want struct {
			Tools []struct {
				Name         string          `json:"name"`
				InputSchema  json.RawMessage `json:"inputSchema"`
				OutputSchema json.RawMessage `json:"outputSchema"`
			} `json:"tools"`
		}
		if json.Unmarshal(page, &want) != nil {
			if len(got) != 0 {
				t.Fatalf("an unreadable page gave %v", got)
			}
			return
		}
		last := map[string]int{}
		for i, tool := range want.Tools {
			last[tool.Name] = i
		}
		for name, raw := range got {
			tool := want.Tools[last[name]]
			for _, pair := range [][2][]byte{{raw.input, tool.InputSchema}, {raw.output, tool.OutputSchema}} {
				kept, sent := pair[0], pair[1]
				if kept == nil {
					continue
				}
				var m map[string]json.RawMessage
				if !bytes.Equal(kept, sent) || json.Unmarshal(kept, &m) != nil || m == nil {
					t.Fatalf("%s: kept %s for %s", name, kept, sent)
				}
			}
		}
	})
}

// FuzzAsksForInputMatchesDecoding checks the substring shortcut of
// asksForInput against decoding the result.
func FuzzAsksForInputMatchesDecoding(f *testing.F) {
	f.Add([]byte(`{"resultType":"input_required","inputRequests":{}}`))
	f.Add([]byte(`{"content":[{"type":"text","text":"input_required"}]}`))
	f.Add([]byte(`{"resultType":"input_\u0072equired"}`))
	f.Add([]byte(`{"resultType":"complete"}`))
	f.Add([]byte(`{"RESULTTYPE":"input_required"}`))
	f.Add([]byte(`{"resultType":"input_required","resultType":null}`))
	f.Add([]byte(`{"resultType":"input_required","ResultType":"complete"}`))
	f.Add([]byte(`{"resultType":"input_required"`))
	f.Fuzz(func(t *testing.T, result []byte) {
		var r struct {
			ResultType mcp.ResultType `json:"resultType"`
		}
		want := json.Unmarshal(result, &r) == nil && r.ResultType == mcp.ResultTypeInputRequired
		if got := asksForInput(result); got != want {
			t.Fatalf("asksForInput(%s) = %v, want %v", result, got, want)
		}
	})
}

// TestAnInputRequiredResultSpelledOtherwiseIsNotTakenRaw: a multi
// round-trip result whose resultType is escaped, or its key cased
// otherwise, is read by mcp-go's client as asking for input, so it must
// not be taken raw in place of the call's answer (the client would see an
// empty result and never fulfil the requests).
func TestAnInputRequiredResultSpelledOtherwiseIsNotTakenRaw(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		result string
		want   bool
	}{
		{"as written", `{"resultType":"input_required","inputRequests":{}}`, true},
		{"with an escaped value", `{"resultType":"input_\u0072equired"}`, true},
		{"with a key cased otherwise", `{"ResultType":"input_required"}`, true},
		{"overridden by a later key", `{"resultType":"input_required","resultType":"complete"}`, false},
		{"with a later null", `{"resultType":"input_required","resultType":null}`, true},
		{"in a text only", `{"content":[{"type":"text","text":"\"resultType\":\"input_required\""}]}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := asksForInput([]byte(tt.result)); got != tt.want {
				t.Errorf("asksForInput(%s) = %v, want %v", tt.result, got, tt.want)
			}
		})
	}
}
