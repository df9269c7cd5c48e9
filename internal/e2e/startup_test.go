package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// listedNames lists the tools mcpwarden exposes. It waits longer than
// any startup_wait a test sets (at most 30 s), since the first tools/list
// may rightly be held that long by an upstream still starting.
func listedNames(t *testing.T, c *client.Client) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// TestSlowUpstreamDoesNotDelayInitialize starts mcpwarden with a server
// that never answers initialize (init_timeout 60 s) next to
// server-everything: mcpwarden's own initialize is answered at once, and
// everything's tools are listed and callable.
func TestSlowUpstreamDoesNotDelayInitialize(t *testing.T) {
	t.Parallel()
	mark := t.Name() + "-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { killMarked(mark) })
	f := newFixture(t, "stdio", "  stubborn:\n"+stubbornServer(mark)+"\n  everything:\n"+serverEverything(), `  allow: ["mcp:everything:*"]`)
	f.setStartupWait(t, "30s") // the stubborn server holds the first tools/list this long
	begin := time.Now()
	c := connectStdio(t, f)
	took := time.Since(begin)
	t.Logf("initialize answered %s after starting mcpwarden", took.Round(time.Millisecond))
	if took > 5*time.Second {
		t.Errorf("initialize took %s with an upstream that never answers; want it not to wait for upstreams", took)
	}
	if names := listedNames(t, c); !slices.Contains(names, "everything__echo") {
		t.Errorf("tools/list = %v, want everything's tools", names)
	}
	if res := callTool(t, c, "everything__echo", map[string]any{"message": "hi"}); res.IsError {
		t.Errorf("echo: %s", testkit.Text(res))
	}
}

// TestLateUpstreamToolsAppearWithListChanged starts server-everything 11 s
// late, past the 10 s that requests wait for upstreams at start: the first
// tools/list answers without it, its tools come with
// notifications/tools/list_changed once it is up, and a call of one of
// them made at once waits for it.
func TestLateUpstreamToolsAppearWithListChanged(t *testing.T) {
	t.Parallel()
	everything := filepath.Join(npmMods, "@modelcontextprotocol", "server-everything", "dist", "index.js")
	// Started by sh, the script's installation is not the command's: the
	// sandbox is told to let it read the pinned packages.
	late := fmt.Sprintf(`    command: sh
    args: ["-c", "sleep 11; exec node %s stdio"]
    sandbox: { read: [%q] }`, everything, npmMods)
	f := newFixture(t, "stdio", "  everything:\n"+late, `  allow: ["mcp:everything:*"]`)
	f.setStartupWait(t, "10s") // the default, which the test is about
	changed := make(chan struct{}, 10)
	begin := time.Now()
	c := connectStdio(t, f)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) {
			changed <- struct{}{}
		}
	})
	if took := time.Since(begin); took > 5*time.Second {
		t.Errorf("initialize took %s", took)
	}
	// A call of a tool not listed yet waits for it, past the 10 s.
	called := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "everything__echo", Arguments: map[string]any{"message": "early"}}})
		if err == nil && res.IsError {
			err = fmt.Errorf("%s", testkit.Text(res))
		}
		called <- err
	}()
	if names := listedNames(t, c); slices.Contains(names, "everything__echo") {
		t.Logf("everything was up within the first tools/list (%s); cannot check list_changed", time.Since(begin))
		return
	}
	t.Logf("first tools/list answered %s after start, without everything", time.Since(begin).Round(time.Millisecond))
	select {
	case <-changed:
	case <-time.After(40 * time.Second):
		t.Fatal("no notifications/tools/list_changed within 40 s")
	}
	if names := listedNames(t, c); !slices.Contains(names, "everything__echo") {
		t.Errorf("tools/list after list_changed = %v, want everything's tools", names)
	}
	if err := <-called; err != nil {
		t.Errorf("a call made before its server was up: %v", err)
	}
}
