// Command goserver is an MCP server written the way Go servers usually are,
// for the end-to-end tests: mcp-go typed tool handlers bind the arguments
// into structs with encoding/json (so keys match case-insensitively, under
// Unicode simple folding, and the last of two such keys wins) and act with
// raw os.ReadFile, os.WriteFile and os.Rename on the paths given, letting the
// kernel resolve them. It does nothing to protect itself: that is the
// proxy's job.
//
// Without flags it serves over stdio. With -http ADDR it serves streamable
// HTTP on ADDR (e.g. 127.0.0.1:0) and prints its endpoint URL, then a
// newline, on standard output once it is listening.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// readArgs are read's arguments.
type readArgs struct {
	Path string `json:"path" jsonschema:"the file to read"`
}

// writeArgs are write's arguments.
type writeArgs struct {
	Path    string `json:"path" jsonschema:"the file to write"`
	Content string `json:"content" jsonschema:"what to write"`
}

// fetchArgs are fetch's arguments.
type fetchArgs struct {
	URL    string `json:"url" jsonschema:"the http:// URL to get"`
	Direct bool   `json:"direct,omitempty" jsonschema:"dial by itself, not through the proxy"`
}

// moveArgs are move's arguments.
type moveArgs struct {
	Source      string `json:"source" jsonschema:"the file to move"`
	Destination string `json:"destination" jsonschema:"where to move it"`
}

func main() {
	addr := flag.String("http", "", "serve streamable HTTP on this address instead of stdio")
	flag.Parse()
	if err := run(*addr); err != nil {
		fmt.Fprintln(os.Stderr, "goserver:", err)
		os.Exit(1)
	}
}

func run(addr string) error {
	s := newServer()
	if addr == "" {
		return server.ServeStdio(s)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %q: %w", addr, err)
	}
	srv := &http.Server{Handler: server.NewStreamableHTTPServer(s)}
	fmt.Printf("http://%s/mcp\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		if err := srv.Close(); err != nil {
			return err
		}
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

// newServer returns the server with its tools.
func newServer() *server.MCPServer {
	s := server.NewMCPServer("goserver", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("read", mcp.WithDescription("Returns the content of the file at path."), mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithInputSchema[readArgs]()), mcp.NewTypedToolHandler(read))
	s.AddTool(mcp.NewTool("write", mcp.WithDescription("Writes content to the file at path."),
		mcp.WithInputSchema[writeArgs]()), mcp.NewTypedToolHandler(write))
	s.AddTool(mcp.NewTool("move", mcp.WithDescription("Renames source to destination."),
		mcp.WithInputSchema[moveArgs]()), mcp.NewTypedToolHandler(move))
	s.AddTool(mcp.NewTool("fetch", mcp.WithDescription("Gets the URL through the proxy HTTP_PROXY names, or directly without one."),
		mcp.WithInputSchema[fetchArgs]()), mcp.NewTypedToolHandler(fetch))
	return s
}

func read(_ context.Context, _ mcp.CallToolRequest, a readArgs) (*mcp.CallToolResult, error) {
	data, err := os.ReadFile(a.Path)
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	return mcp.NewToolResultText(string(data)), nil
}

func write(_ context.Context, _ mcp.CallToolRequest, a writeArgs) (*mcp.CallToolResult, error) {
	if err := os.WriteFile(a.Path, []byte(a.Content), 0o600); err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	return mcp.NewToolResultText("wrote " + a.Path), nil
}

func move(_ context.Context, _ mcp.CallToolRequest, a moveArgs) (*mcp.CallToolResult, error) {
	if err := os.Rename(a.Source, a.Destination); err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	return mcp.NewToolResultText("moved " + a.Source + " to " + a.Destination), nil
}

// fetch gets a.URL as a server that reaches the internet does, through
// the proxy HTTP_PROXY names. It names the proxy itself rather than using
// http.ProxyFromEnvironment, which never proxies a loopback address: the
// tests' "internet" is a loopback listener.
func fetch(ctx context.Context, _ mcp.CallToolRequest, a fetchArgs) (*mcp.CallToolResult, error) {
	tr := &http.Transport{}
	if p := os.Getenv("HTTP_PROXY"); p != "" && !a.Direct {
		u, err := url.Parse(p)
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		tr.Proxy = http.ProxyURL(u)
	}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URL, nil)
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	return mcp.NewToolResultText(fmt.Sprintf("%d %s", resp.StatusCode, body)), nil
}
