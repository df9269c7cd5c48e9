package upstream

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// callRequest is the tools/call sendCall builds, with meta decoded from
// metaJSON when it is an object.
func callRequest(id int64, name string, args []byte, metaJSON string) transport.JSONRPCRequest {
	p := mcp.CallToolParams{Name: name, RawArguments: args}
	if metaJSON != "" {
		var m mcp.Meta
		if json.Unmarshal([]byte(metaJSON), &m) == nil {
			p.Meta = &m
		}
	}
	return transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id), Method: string(mcp.MethodToolsCall), Params: p}
}

// sameAsMarshal fails t unless marshalCall(req) is json.Marshal's text
// once its arguments are compacted and escaped as json.Marshal escapes
// them, and fails as json.Marshal fails.
func sameAsMarshal(t *testing.T, req transport.JSONRPCRequest) {
	t.Helper()
	want, wantErr := json.Marshal(req)
	got, err := marshalCall(&req)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("marshalCall error %v, json.Marshal's %v", err, wantErr)
	}
	if err != nil {
		return
	}
	var compact, escaped bytes.Buffer
	if err := json.Compact(&compact, got); err != nil {
		t.Fatalf("marshalCall wrote JSON that does not parse (%v): %s", err, got)
	}
	json.HTMLEscape(&escaped, compact.Bytes())
	if !bytes.Equal(escaped.Bytes(), want) {
		t.Fatalf("marshalCall wrote\n%s\njson.Marshal writes\n%s", got, want)
	}
}

func TestMarshalCallIsJSONMarshal(t *testing.T) {
	for _, tc := range []struct {
		name, tool, args, meta string
	}{
		{"plain", "echo", `{"message":"hi"}`, ""},
		{"no arguments", "echo", `{}`, ""},
		{"null arguments", "echo", `null`, ""},
		{"markup in the arguments", "echo", `{"html":"<a href=\"x\">&amp;</a>","s":"\u2028"}`, ""},
		{"arguments with spaces", "echo", "{ \"a\" : [ 1 , 2 ] }\n", ""},
		{"big and exact numbers", "add", `{"a":12345678901234567890,"b":1e400,"c":-0.0}`, ""},
		{"quote in the tool's name", `say"hi`, `{}`, ""},
		{"backslash in the tool's name", `a\b`, `{}`, ""},
		{"markup in the tool's name", "a<b>&c", `{}`, ""},
		{"unicode in the tool's name", "écrire_☃", `{}`, ""},
		{"control character in the tool's name", "a\tb\x00", `{}`, ""},
		{"invalid UTF-8 in the tool's name", "a\xffb", `{}`, ""},
		{"empty tool name", "", `{}`, ""},
		{"progress token", "echo", `{}`, `{"progressToken":7}`},
		{"trace context and more", "echo", `{}`, `{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","z":[1,"<"],"a":{"b":null}}`},
		{"empty meta", "echo", `{}`, `{}`},
		{"arguments that are not JSON", "echo", `{"a":`, ""},
		{"arguments of spaces only", "echo", `   `, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sameAsMarshal(t, callRequest(firstCallID+1, tc.tool, []byte(tc.args), tc.meta))
		})
	}
	t.Run("what is not written out", func(t *testing.T) {
		ttl := int64(5)
		for name, edit := range map[string]func(*transport.JSONRPCRequest, *mcp.CallToolParams){
			"string id":           func(r *transport.JSONRPCRequest, _ *mcp.CallToolParams) { r.ID = mcp.NewRequestId("a<b") },
			"decoded arguments":   func(_ *transport.JSONRPCRequest, p *mcp.CallToolParams) { p.Arguments = map[string]any{"a": 1} },
			"no raw arguments":    func(_ *transport.JSONRPCRequest, p *mcp.CallToolParams) { p.RawArguments = nil },
			"a task":              func(_ *transport.JSONRPCRequest, p *mcp.CallToolParams) { p.Task = &mcp.TaskParams{TTL: &ttl} },
			"request state":       func(_ *transport.JSONRPCRequest, p *mcp.CallToolParams) { p.RequestState = "s" },
			"another method":      func(r *transport.JSONRPCRequest, _ *mcp.CallToolParams) { r.Method = "tools/<call>" },
			"another version":     func(r *transport.JSONRPCRequest, _ *mcp.CallToolParams) { r.JSONRPC = "1.0" },
			"params as a pointer": nil,
		} {
			t.Run(name, func(t *testing.T) {
				req := callRequest(firstCallID+2, "echo", []byte(`{"a":"<"}`), `{"progressToken":"t"}`)
				p := req.Params.(mcp.CallToolParams)
				if edit == nil {
					req.Params = &p
				} else {
					edit(&req, &p)
					req.Params = p
				}
				sameAsMarshal(t, req)
			})
		}
	})
	t.Run("room for the newline", func(t *testing.T) {
		req := callRequest(1<<62, "echo", []byte(`{"message":"hi"}`), `{"progressToken":"a-token"}`)
		msg, err := marshalCall(&req)
		if err != nil {
			t.Fatal(err)
		}
		if cap(msg) == len(msg) {
			t.Fatalf("no room after the message (len = cap = %d): the stdio transport's newline copies it", len(msg))
		}
	})
}

// FuzzMarshalCallIsJSONMarshal holds marshalCall to json.Marshal's text
// for any tool name, arguments, _meta and id.
func FuzzMarshalCallIsJSONMarshal(f *testing.F) {
	f.Add(int64(firstCallID+1), "echo", []byte(`{"message":"hi"}`), "")
	f.Add(int64(-1), "a\"<\\>&\u2028", []byte(` {"a" : "<\u2029>"} `), `{"progressToken":1,"x":"<"}`)
	f.Add(int64(0), "", []byte(`null`), `{}`)
	f.Add(int64(3), "x", []byte(`{"a":`), `[]`)
	f.Fuzz(func(t *testing.T, id int64, name string, args []byte, meta string) {
		sameAsMarshal(t, callRequest(id, name, args, meta))
	})
}

// BenchmarkMarshalCall compares marshalCall with json.Marshal on the
// bench's echo call, with a trace context in _meta and without.
func BenchmarkMarshalCall(b *testing.B) {
	for _, meta := range []string{"", `{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`} {
		req := callRequest(firstCallID+1, "echo", []byte(`{"message":"hello"}`), meta)
		name := "no meta"
		if meta != "" {
			name = "trace context"
		}
		b.Run(name+"/json.Marshal", func(b *testing.B) {
			for b.Loop() {
				if _, err := json.Marshal(req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/marshalCall", func(b *testing.B) {
			for b.Loop() {
				if _, err := marshalCall(&req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
