package proxy

import (
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestToolsListDuringStartupWaitsForTheServersStillStarting: a client that
// connects while an upstream is still on its first start (an npx server
// downloading its package) gets, within startup_wait, the whole list, not a
// partial one that clients cache (issue 37).
func TestToolsListDuringStartupWaitsForTheServersStillStarting(t *testing.T) {
	t.Parallel()
	e, release := startingEnvFor(t, 20*time.Second)
	c := e.client(t) // initialize does not wait
	time.AfterFunc(300*time.Millisecond, release)
	begin := time.Now()
	res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(res.Tools, func(tool mcp.Tool) bool { return tool.Name == "up__echo" }) {
		t.Errorf("tools/list during start-up = %d tools, want up__echo: it answered before its server was up", len(res.Tools))
	}
	if waited := time.Since(begin); waited < 250*time.Millisecond || waited > 15*time.Second {
		t.Errorf("tools/list took %s, want it to wait for the server (300ms), not for the deadline (20s)", waited)
	}
}
