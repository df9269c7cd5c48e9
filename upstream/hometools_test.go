package upstream

import (
	"context"
	"os"
	"path/filepath"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// addHomeTools adds write_home, which writes its text to a file in the
// server's HOME and answers the file's path, and read_file, which
// answers the content of the file at path (or the error).
func addHomeTools(s *mcpserver.MCPServer) {
	s.AddTool(mcp.NewTool("write_home", mcp.WithString("text")), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		path := filepath.Join(os.Getenv("HOME"), "note")
		if err := os.WriteFile(path, []byte(req.GetString("text", "")), 0o600); err != nil {
			return mcp.NewToolResultText("ERROR " + err.Error()), nil
		}
		return mcp.NewToolResultText(path), nil
	})
	s.AddTool(mcp.NewTool("read_file", mcp.WithString("path")), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		b, err := os.ReadFile(req.GetString("path", ""))
		if err != nil {
			return mcp.NewToolResultText("ERROR " + err.Error()), nil
		}
		return mcp.NewToolResultText(string(b)), nil
	})
}
