// Command stateserver is an MCP server over stdio that keeps working state
// in its process, for the end-to-end tests of isolation: remember stores a
// value in memory and recall returns it with the process id, so a test
// sees which child served a call and whether another caller's state leaked
// into it.
package main

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// rememberArgs are remember's arguments.
type rememberArgs struct {
	Value string `json:"value" jsonschema:"what to remember"`
}

// A memory is the process's working state.
type memory struct {
	mu    sync.Mutex
	value string
}

func main() {
	m := &memory{}
	s := server.NewMCPServer("stateserver", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("remember", mcp.WithDescription("Remembers value in this process."),
		mcp.WithInputSchema[rememberArgs]()), mcp.NewTypedToolHandler(m.remember))
	s.AddTool(mcp.NewTool("recall", mcp.WithDescription("Returns this process's id and the value it remembers."),
		mcp.WithReadOnlyHintAnnotation(true)), m.recall)
	if err := server.ServeStdio(s); err != nil {
		fmt.Fprintln(os.Stderr, "stateserver:", err)
		os.Exit(1)
	}
}

func (m *memory) remember(_ context.Context, _ mcp.CallToolRequest, a rememberArgs) (*mcp.CallToolResult, error) {
	m.mu.Lock()
	m.value = a.Value
	m.mu.Unlock()
	return m.recall(context.Background(), mcp.CallToolRequest{})
}

func (m *memory) recall(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return mcp.NewToolResultText(fmt.Sprintf("pid=%d value=%s", os.Getpid(), m.value)), nil
}
