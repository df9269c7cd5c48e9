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

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The bare-library baseline (issue 39) is the least a proxy built on
// mcp-go costs: its server in front, one client per upstream behind, every
// upstream tool re-exposed as <server>__<tool>, and each call forwarded
// with the client and its answer returned. No policy, audit or scanning;
// only what mcp-go does is in the path. It is the "libproxy" subcommand of
// the bench binary, measured beside mcpwarden in the same run.

// A libUpstream is one upstream of the baseline: a streamable HTTP URL or
// a stdio command line.
type libUpstream struct {
	name string
	url  string   // streamable HTTP; or
	argv []string // stdio
}

// parseLibUpstream parses NAME=VALUE, the value split at spaces for stdio.
func parseLibUpstream(v string, stdio bool) (libUpstream, error) {
	name, value, ok := strings.Cut(v, "=")
	if !ok || name == "" || strings.TrimSpace(value) == "" {
		return libUpstream{}, fmt.Errorf("%q: write NAME=URL for -http, NAME=COMMAND ARGS for -stdio", v)
	}
	if stdio {
		return libUpstream{name: name, argv: strings.Fields(value)}, nil
	}
	return libUpstream{name: name, url: value}, nil
}

// runLibProxy is the "libproxy" subcommand: `libproxy -listen ADDR|stdio
// -stdio NAME=COMMAND ARGS... -http NAME=URL...` connects to every
// upstream, then serves their tools, prefixed, over streamable HTTP at
// ADDR/mcp (until SIGTERM or SIGINT) or over stdio (until stdin ends).
func runLibProxy(args []string) error {
	fs := flag.NewFlagSet("libproxy", flag.ContinueOnError)
	listen := fs.String("listen", "", "`ADDR` to serve streamable HTTP at (path /mcp), or stdio")
	var ups []libUpstream
	for _, kind := range []struct {
		flag, usage string
		stdio       bool
	}{
		{"stdio", "`NAME=COMMAND ARGS` of an upstream over stdio, split at spaces (repeatable)", true},
		{"http", "`NAME=URL` of an upstream over streamable HTTP (repeatable)", false},
	} {
		fs.Func(kind.flag, kind.usage, func(v string) error {
			u, err := parseLibUpstream(v, kind.stdio)
			if err != nil {
				return err
			}
			ups = append(ups, u)
			return nil
		})
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *listen == "" || len(ups) == 0 {
		return errors.New("libproxy: write -listen ADDR (or stdio) and at least one -stdio or -http upstream")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s := server.NewMCPServer("bench-libproxy", "1", server.WithToolCapabilities(false))
	for _, u := range ups {
		c, err := u.connect(ctx)
		if err != nil {
			return fmt.Errorf("libproxy: upstream %s: %w", u.name, err)
		}
		defer c.Close()
		if err := reexpose(ctx, s, u.name, c); err != nil {
			return fmt.Errorf("libproxy: upstream %s: %w", u.name, err)
		}
	}
	if *listen == "stdio" {
		stdio := server.NewStdioServer(s)
		stdio.SetErrorLogger(slog.NewLogLogger(slog.DiscardHandler, slog.LevelError))
		err := stdio.Listen(ctx, os.Stdin, os.Stdout)
		if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	return serveUntilDone(ctx, ln, newLibHandler(s))
}

// newLibHandler is mcp-go's streamable HTTP server for s at /mcp, holding
// sessions as mcpwarden does.
func newLibHandler(s *server.MCPServer) http.Handler {
	stream := server.NewStreamableHTTPServer(s, server.WithEndpointPath("/mcp"), server.WithStateful(true),
		server.WithStreamableHTTPLogger(slog.New(slog.DiscardHandler)))
	mux := http.NewServeMux()
	mux.Handle("/mcp", stream)
	return mux
}

// connect opens and initializes one client session on u, a stdio child's
// stderr going to the baseline's own.
func (u libUpstream) connect(ctx context.Context) (*client.Client, error) {
	if u.url != "" {
		return connectHTTP(ctx, u.url)
	}
	c, _, err := connectStdioTo(ctx, os.Stderr, u.argv[0], u.argv[1:]...)
	return c, err
}

// reexpose lists c's tools and adds each to s as name__tool, its handler
// forwarding the call to c under the upstream's name.
func reexpose(ctx context.Context, s *server.MCPServer, name string, c *client.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var req mcp.ListToolsRequest
	for {
		list, err := c.ListTools(ctx, req)
		if err != nil {
			return fmt.Errorf("listing tools: %w", err)
		}
		for _, t := range list.Tools {
			upstreamName := t.Name
			t.Name = name + "__" + upstreamName
			s.AddTool(t, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				req.Params.Name = upstreamName
				return c.CallTool(ctx, req)
			})
		}
		if list.NextCursor == "" {
			return nil
		}
		req.Params.Cursor = list.NextCursor
	}
}

// openLibProxy starts the baseline with the upstreams mcpwarden has (the
// bench upstream and server-everything over stdio, the bench upstream over
// HTTP) and opens the targets that mirror mcpwarden's: HTTP in front of the
// HTTP upstream, HTTP in front of the stdio upstreams, and stdio in front
// of the stdio upstreams. A failure becomes "not run" rows.
func (b *bench) openLibProxy(ctx context.Context) {
	ups := []string{"-stdio", "bench=" + b.self + " upstream", "-stdio", "everything=node " + b.everyJS + " stdio", "-http", "bench-http=" + b.httpUpURL}
	b.openStdio(ctx, routeLibStdio, 0, allWorkloads, wardenTool, b.self, append([]string{"libproxy", "-listen", "stdio"}, ups...)...)
	if err := b.openLibHTTP(ctx, ups); err != nil {
		b.logf("%s: %v", routeLibHTTP, err)
		b.notRun(routeLibHTTP, 0, viaHTTP(benchWorkloads), err.Error())
		b.notRun(routeLibBrdg, 0, allWorkloads, err.Error())
	}
}

func (b *bench) openLibHTTP(ctx context.Context, ups []string) error {
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	p, err := b.start("libproxy-http", nil, b.self, append([]string{"libproxy", "-listen", addr}, ups...)...)
	if err != nil {
		return err
	}
	url := "http://" + addr + "/mcp"
	if err := waitInitialize(ctx, p, url, 60*time.Second); err != nil {
		return err
	}
	b.openHTTP(ctx, routeLibHTTP, 0, viaHTTP(benchWorkloads), wardenTool, url, p.PID())
	b.openHTTP(ctx, routeLibBrdg, 0, allWorkloads, wardenTool, url, p.PID())
	return nil
}
