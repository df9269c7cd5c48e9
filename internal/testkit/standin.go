package testkit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// A StandIn is an in-process upstream MCP server for tests, named
// "stand-in", that records every tools/call it gets. Add its tools with
// AddTool before serving it; Echo and Reply are the handlers most tests
// need. It is safe for concurrent use.
type StandIn struct {
	srv *server.MCPServer

	mu    sync.Mutex
	calls []Call
}

// A Call is one tools/call a StandIn got: the tool's name and its
// arguments as the raw JSON text that arrived.
type Call struct {
	Tool      string
	Arguments string
}

// NewStandIn returns a stand-in with tool capabilities and no tools; opts
// add to its mcp-go options (pagination, resources, hooks, …).
func NewStandIn(opts ...server.ServerOption) *StandIn {
	s := &StandIn{}
	base := []server.ServerOption{
		server.WithToolCapabilities(false),
		server.WithToolHandlerMiddleware(s.record),
	}
	s.srv = server.NewMCPServer("stand-in", "1.0", append(base, opts...)...)
	return s
}

// record is the tool middleware that notes each call before handling it.
func (s *StandIn) record(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.mu.Lock()
		s.calls = append(s.calls, Call{Tool: req.Params.Name, Arguments: string(req.Params.RawArguments)})
		s.mu.Unlock()
		return next(ctx, req)
	}
}

// AddTool adds a tool and its handler.
func (s *StandIn) AddTool(tool mcp.Tool, h server.ToolHandlerFunc) {
	s.srv.AddTool(tool, h)
}

// MCP returns the mcp-go server, for an in-process client or transport.
func (s *StandIn) MCP() *server.MCPServer { return s.srv }

// Calls returns the calls received so far, oldest first.
func (s *StandIn) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Arguments returns the raw arguments of the calls received so far, oldest
// first.
func (s *StandIn) Arguments() []string {
	calls := s.Calls()
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.Arguments
	}
	return out
}

// URL serves the stand-in over streamable HTTP until the test ends and
// returns its endpoint. Each wrap, if given, wraps the handler, innermost
// first, to watch or hold requests on their way in.
func (s *StandIn) URL(t testing.TB, wrap ...func(http.Handler) http.Handler) string {
	t.Helper()
	var h http.Handler = server.NewStreamableHTTPServer(s.srv)
	for _, w := range wrap {
		h = w(h)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// Echo is a tool handler that answers with its "text" argument.
func Echo(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return mcp.NewToolResultText(req.GetString("text", "")), nil
}

// Reply returns a tool handler that answers every call with text.
func Reply(text string) server.ToolHandlerFunc {
	return func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(text), nil
	}
}
