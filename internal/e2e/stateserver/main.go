// Command stateserver is an MCP server over stdio that keeps working state
// in its process, for the end-to-end tests of isolation: remember stores a
// value in memory and recall returns it with the process id, so a test
// sees which child served a call and whether another caller's state leaked
// into it. The same "pid=<pid> value=<value>" is what the resource
// state://value, the prompt recall and the completion of recall's argument
// return, so that every kind of request shows which child served it. level
// returns the log level the client last set; a subscription to
// state://value is told of every remember. later asks the client for
// sampling after it has returned, outside any call, and spoof sends
// progress notifications for tokens of calls it was never given.
package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// valueURI is the resource that holds the remembered value.
const valueURI = "state://value"

// rememberArgs are remember's arguments.
type rememberArgs struct {
	Value string `json:"value" jsonschema:"what to remember"`
}

// waitArgs are wait's arguments.
type waitArgs struct {
	MS int `json:"ms" jsonschema:"how long to wait, in milliseconds"`
}

// laterArgs are later's arguments.
type laterArgs struct {
	Text string `json:"text" jsonschema:"what the sampling request asks"`
}

// A memory is the process's working state.
type memory struct {
	s *server.MCPServer

	mu         sync.Mutex
	value      string
	subscribed bool
	sampled    string // the answer to later's sampling request
	wg         sync.WaitGroup
}

func main() {
	m := &memory{}
	hooks := &server.Hooks{}
	hooks.AddAfterSubscribe(func(context.Context, any, *mcp.SubscribeRequest, *mcp.EmptyResult) {
		m.mu.Lock()
		m.subscribed = true
		m.mu.Unlock()
	})
	s := server.NewMCPServer("stateserver", "1.0.0",
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(true, false),
		server.WithPromptCapabilities(false),
		server.WithLogging(),
		server.WithCompletions(),
		server.WithPromptCompletionProvider(m),
		server.WithHooks(hooks),
	)
	m.s = s
	s.AddTool(mcp.NewTool("remember", mcp.WithDescription("Remembers value in this process."),
		mcp.WithInputSchema[rememberArgs]()), mcp.NewTypedToolHandler(m.remember))
	s.AddTool(mcp.NewTool("recall", mcp.WithDescription("Returns this process's id and the value it remembers."),
		mcp.WithReadOnlyHintAnnotation(true)), m.recall)
	s.AddTool(mcp.NewTool("level", mcp.WithDescription("Returns this process's id and the log level its client set."),
		mcp.WithReadOnlyHintAnnotation(true)), m.level)
	s.AddTool(mcp.NewTool("wait", mcp.WithDescription("Waits ms milliseconds."),
		mcp.WithInputSchema[waitArgs]()), mcp.NewTypedToolHandler(m.wait))
	s.AddTool(mcp.NewTool("later", mcp.WithDescription("Returns, then asks the client for sampling."),
		mcp.WithInputSchema[laterArgs]()), mcp.NewTypedToolHandler(m.later))
	s.AddTool(mcp.NewTool("sampled", mcp.WithDescription("Returns the answer to later's sampling request."),
		mcp.WithReadOnlyHintAnnotation(true)), m.sampledAnswer)
	s.AddTool(mcp.NewTool("spoof", mcp.WithDescription("Sends progress for tokens mcpwarden-1 to mcpwarden-200.")), m.spoof)
	s.AddResource(mcp.NewResource(valueURI, "value", mcp.WithMIMEType("text/plain")), m.read)
	s.AddPrompt(mcp.NewPrompt("recall", mcp.WithPromptDescription("What this process remembers."),
		mcp.WithArgument("x", mcp.ArgumentDescription("completed with the remembered value"))), m.prompt)
	err := server.ServeStdio(s)
	m.wg.Wait()
	if err != nil {
		fmt.Fprintln(os.Stderr, "stateserver:", err)
		os.Exit(1)
	}
}

// text is what every request reports: the process and its value.
func (m *memory) text() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return fmt.Sprintf("pid=%d value=%s", os.Getpid(), m.value)
}

func (m *memory) remember(ctx context.Context, _ mcp.CallToolRequest, a rememberArgs) (*mcp.CallToolResult, error) {
	m.mu.Lock()
	m.value = a.Value
	subscribed := m.subscribed
	m.mu.Unlock()
	if subscribed {
		m.s.SendNotificationToAllClients(mcp.MethodNotificationResourceUpdated, map[string]any{"uri": valueURI})
	}
	return m.recall(ctx, mcp.CallToolRequest{})
}

func (m *memory) recall(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return mcp.NewToolResultText(m.text()), nil
}

func (m *memory) level(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	level := mcp.LoggingLevel("unset")
	if l, ok := server.ClientSessionFromContext(ctx).(server.SessionWithLogging); ok && l.GetLogLevel() != "" {
		level = l.GetLogLevel()
	}
	return mcp.NewToolResultText(fmt.Sprintf("pid=%d level=%s", os.Getpid(), level)), nil
}

func (m *memory) wait(ctx context.Context, _ mcp.CallToolRequest, a waitArgs) (*mcp.CallToolResult, error) {
	select {
	case <-time.After(time.Duration(a.MS) * time.Millisecond):
	case <-ctx.Done():
	}
	return m.recall(ctx, mcp.CallToolRequest{})
}

// later returns at once and, 300ms later, asks the client for sampling
// with text; sampled returns the answer.
func (m *memory) later(ctx context.Context, _ mcp.CallToolRequest, a laterArgs) (*mcp.CallToolResult, error) {
	sctx := context.WithoutCancel(ctx) // the client session, past the call
	m.wg.Go(func() {
		time.Sleep(300 * time.Millisecond)
		res, err := m.s.RequestSampling(sctx, mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{
			Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent(a.Text)}},
			MaxTokens: 10,
		}})
		answer := ""
		if err != nil {
			answer = "error: " + err.Error()
		} else if tc, ok := res.Content.(mcp.TextContent); ok {
			answer = tc.Text
		}
		m.mu.Lock()
		m.sampled = answer
		m.mu.Unlock()
	})
	return m.recall(ctx, mcp.CallToolRequest{})
}

func (m *memory) sampledAnswer(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return mcp.NewToolResultText(fmt.Sprintf("pid=%d sampled=%s", os.Getpid(), m.sampled)), nil
}

// spoof sends progress for the tokens mcpwarden gives the calls it
// forwards, none of which is this call's.
func (m *memory) spoof(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	for i := 1; i <= 200; i++ {
		_ = m.s.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{
			"progressToken": fmt.Sprintf("mcpwarden-%d", i), "progress": 1, "message": "spoofed by " + m.text(),
		})
	}
	return m.recall(ctx, mcp.CallToolRequest{})
}

func (m *memory) read(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: valueURI, MIMEType: "text/plain", Text: m.text()}}, nil
}

func (m *memory) prompt(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	return mcp.NewGetPromptResult("what this process remembers", []mcp.PromptMessage{
		mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(m.text())),
	}), nil
}

// CompletePromptArgument completes recall's argument with the text.
func (m *memory) CompletePromptArgument(context.Context, string, mcp.CompleteArgument, mcp.CompleteContext) (*mcp.Completion, error) {
	return &mcp.Completion{Values: []string{m.text()}}, nil
}
