package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/internal/httpserve"
)

// newUpstream is the benchmark's minimal upstream: an echo tool and a
// payload tool returning kib KiB of text. Results are built from
// precomputed strings, so the upstream spends as little time as possible
// and what is measured is the transport and the proxy.
func newUpstream() *server.MCPServer {
	s := server.NewMCPServer("bench-upstream", "1", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("echo",
		mcp.WithDescription("Echoes message back."),
		mcp.WithString("message", mcp.Required(), mcp.Description("Message to echo")),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("Echo: " + req.GetString("message", "")), nil
	})
	block := strings.Repeat("abcdefghijklmnopqrstuvwxyz012345", 1024/32) // 1 KiB
	s.AddTool(mcp.NewTool("payload",
		mcp.WithDescription("Returns kib KiB of text."),
		mcp.WithNumber("kib", mcp.Required(), mcp.Description("Size of the result text in KiB")),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		n := req.GetInt("kib", 1)
		if n < 0 || n > 64<<10 {
			return mcp.NewToolResultError(fmt.Sprintf("kib %d out of range", n)), nil
		}
		return mcp.NewToolResultText(strings.Repeat(block, n)), nil
	})
	return s
}

// runUpstream is the "upstream" subcommand: it serves newUpstream over
// stdio, or over streamable HTTP at /mcp with -http ADDR, until stdin ends
// (stdio) or SIGTERM/SIGINT.
func runUpstream(args []string) error {
	fs := flag.NewFlagSet("upstream", flag.ContinueOnError)
	addr := fs.String("http", "", "serve streamable HTTP at `ADDR`/mcp instead of stdio")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s := newUpstream()
	if *addr == "" {
		stdio := server.NewStdioServer(s)
		stdio.SetErrorLogger(slog.NewLogLogger(slog.DiscardHandler, slog.LevelError))
		err := stdio.Listen(ctx, os.Stdin, os.Stdout)
		if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	stream := server.NewStreamableHTTPServer(s, server.WithEndpointPath("/mcp"),
		server.WithStreamableHTTPLogger(slog.New(slog.DiscardHandler)))
	mux := http.NewServeMux()
	mux.Handle("/mcp", stream)
	return serveUntilDone(ctx, ln, mux)
}

// serveUntilDone serves h on ln until ctx is done, then shuts the server
// down, giving requests in flight two seconds.
func serveUntilDone(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	served, err := httpserve.Run(ctx, srv, ln, 2*time.Second, nil)
	if served != nil {
		return served
	}
	return err
}
