package upstream

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// fetchToolEnv gives the stand-in server a "fetch" tool, which gets its
// "url" argument through the proxy HTTP_PROXY names.
const fetchToolEnv = "UPSTREAM_TEST_FETCH"

// addFetchTool adds the stand-in's fetch tool. It sends every request to
// HTTP_PROXY itself: Go's own choice from the environment skips loopback
// hosts, where the tests' "outside" listens.
func addFetchTool(srv *mcpserver.MCPServer) {
	srv.AddTool(mcp.NewTool("fetch", mcp.WithString("url")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		proxy, err := url.Parse(os.Getenv("HTTP_PROXY"))
		if err != nil || proxy.Host == "" {
			return mcp.NewToolResultError(fmt.Sprintf("no HTTP_PROXY (%q)", os.Getenv("HTTP_PROXY"))), nil
		}
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}}
		resp, err := c.Get(req.GetString("url", ""))
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		if resp.StatusCode != http.StatusOK {
			return mcp.NewToolResultError(resp.Status + ": " + string(b)), nil
		}
		return mcp.NewToolResultText(string(b)), nil
	})
}
