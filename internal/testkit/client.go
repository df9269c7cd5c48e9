package testkit

import (
	"cmp"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Connect returns an in-process client of s, started and initialised as
// Initialize does. opts add to the client's options.
func Connect(t testing.TB, s *server.MCPServer, version string, opts ...client.ClientOption) *client.Client {
	t.Helper()
	c, err := client.NewInProcessClientWithOptions(s, opts...)
	if err != nil {
		t.Fatalf("creating an in-process client: %v", err)
	}
	Initialize(t, c, version)
	return c
}

// Initialize starts c, of any transport, and initialises it as client
// "unit" with protocol version (mcp.LATEST_PROTOCOL_VERSION if empty). c
// is closed when the test ends.
func Initialize(t testing.TB, c *client.Client, version string) {
	t.Helper()
	t.Cleanup(func() { c.Close() })
	ctx := t.Context()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("starting the client: %v", err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: cmp.Or(version, mcp.LATEST_PROTOCOL_VERSION), ClientInfo: mcp.Implementation{Name: "unit", Version: "0"},
	}}); err != nil {
		t.Fatalf("initialising the client: %v", err)
	}
}

// CallTool calls the tool name with args through c and fails the test if
// the call gets no result (a tool result with isError is a result).
func CallTool(t testing.TB, c *client.Client, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	return res
}

// Text is the text of a tool result: its text contents joined by
// newlines, "" for a nil result or one without text.
func Text(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}
