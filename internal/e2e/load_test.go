package e2e

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// hammer makes calls echo calls on each client concurrently and returns how
// many failed, with the first failure.
func hammer(t *testing.T, clients []*client.Client, calls int) (failed int64, first error) {
	t.Helper()
	var (
		n    atomic.Int64
		once sync.Once
		wg   sync.WaitGroup
	)
	for i, c := range clients {
		wg.Go(func() {
			for j := range calls {
				msg := fmt.Sprintf("client %d call %d", i, j)
				res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "everything__echo", Arguments: map[string]any{"message": msg}}})
				if err == nil && (res.IsError || !strings.Contains(testkit.Text(res), msg)) {
					err = fmt.Errorf("echo %q = %q (isError %v)", msg, testkit.Text(res), res.IsError)
				}
				if err != nil {
					n.Add(1)
					once.Do(func() { first = err })
				}
			}
		})
	}
	wg.Wait()
	return n.Load(), first
}

// checkAudited verifies the audit log's chain and that each of want calls
// has exactly one decision and one result event.
func checkAudited(t *testing.T, f *fixture, want int) {
	t.Helper()
	if _, err := audit.Verify(f.auditPath); err != nil {
		t.Errorf("audit chain does not verify: %v", err)
	}
	decisions := readAudit(t, f.auditPath, "decision")
	results := readAudit(t, f.auditPath, "result")
	if len(decisions) != want || len(results) != want {
		t.Errorf("audit has %d decisions and %d results, want %d of each", len(decisions), len(results), want)
	}
}

func TestLoadOverHTTP(t *testing.T) {
	t.Parallel()
	const clients, calls = 64, 100
	f := newFixture(t, testkit.FreeAddr(t), "  everything:\n"+serverEverything(), `  allow: ["mcp:everything:echo"]`)
	url, _ := startHTTP(t, f)
	cs := make([]*client.Client, clients)
	for i := range cs {
		cs[i] = connectHTTP(t, url)
	}
	if failed, first := hammer(t, cs, calls); failed > 0 {
		t.Fatalf("%d of %d calls failed; first: %v", failed, clients*calls, first)
	}
	checkAudited(t, f, clients*calls)
}

func TestLoadOverManyStdioSessions(t *testing.T) {
	t.Parallel()
	const sessions, calls = 6, 100
	var wg sync.WaitGroup
	for range sessions {
		wg.Go(func() {
			t.Run("session", func(t *testing.T) {
				f := newFixture(t, "stdio", "  everything:\n"+serverEverything(), `  allow: ["mcp:everything:echo"]`)
				c := connectStdio(t, f)
				if failed, first := hammer(t, []*client.Client{c, c, c, c}, calls/4); failed > 0 {
					t.Fatalf("%d of %d calls failed; first: %v", failed, calls, first)
				}
				checkAudited(t, f, calls)
			})
		})
	}
	wg.Wait()
}
