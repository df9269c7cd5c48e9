package streamable

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/proxy/wire"
)

// echoMCP returns an MCP server whose one tool, echo, answers at once:
// nothing it serves sends the client anything, so every answer is the
// same each time.
func echoMCP() *server.MCPServer {
	s := server.NewMCPServer("front-fuzz", "1", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("echo"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("echoed"), nil
	})
	return s
}

// recordPost posts body to h on session in process and returns what the
// client gets: the status, the Content-Type and the body.
func recordPost(h http.Handler, session, body string) string {
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1"+EndpointPath, strings.NewReader(body))
	req.Host = "127.0.0.1"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, "2025-11-25")
	if session != "" {
		req.Header.Set(server.HeaderKeySessionID, session)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result().Status + " " + rec.Header().Get("Content-Type") + "\n" + rec.Body.String()
}

// FuzzFrontAnswersAsMcpGo posts each body on a session of the listener
// and of mcp-go's own streamable HTTP server and wants the same answer:
// whatever the front reads of a body (its head, the protocol version of
// its _meta) it reads as mcp-go does, and what it does not serve it
// leaves to mcp-go. Bodies that initialize are skipped: they open
// sessions, which the listener caps and mcp-go does not.
func FuzzFrontAnswersAsMcpGo(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo"}}`,
		`{"jsonrpc":"2.0","id":"x","method":"ping"}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`,
		`{"jsonrpc":"2.0","id":4294967297,"result":{"action":"accept"}}`,
		`{"jsonrpc":"2.0","id":4294967297,"result":{ }}`,
		`{"jsonrpc":"2.0","id":4294967297,"error":null}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"\u005fmeta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","id":2,"METHOD":"ping"}`,
		`[{"jsonrpc":"2.0","id":2,"method":"ping"}]`,
		`{"jsonrpc":`,
	} {
		f.Add(seed)
	}
	h, sessions, err := NewHandler(quietHost(echoMCP()), "127.0.0.1:0", Options{})
	if err != nil {
		f.Fatal(err)
	}
	mcpgo := server.NewStreamableHTTPServer(echoMCP(), server.WithStateful(true), server.WithStreamableHTTPLogger(slog.New(slog.DiscardHandler)))
	session := func(h http.Handler) string {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1"+EndpointPath, strings.NewReader(frontInitialize))
		req.Host = "127.0.0.1"
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		id := rec.Header().Get(server.HeaderKeySessionID)
		if id == "" {
			f.Fatalf("initialize: %d %s", rec.Code, rec.Body)
		}
		return id
	}
	ours, theirs := session(h), session(mcpgo)
	if _, ok := sessions.front.registered.Load(ours); !ok {
		f.Fatal("the front does not serve the listener's session: nothing of it would be fuzzed")
	}
	f.Fuzz(func(t *testing.T, body string) {
		var head wire.Head
		if json.Unmarshal([]byte(body), &head) == nil && head.Method == string(mcp.MethodInitialize) {
			t.Skip()
		}
		if got, want := recordPost(h, ours, body), recordPost(mcpgo, theirs, body); got != want {
			t.Errorf("body %q: the listener answered\n%s\nmcp-go's server answers\n%s", body, got, want)
		}
	})
}
