package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// TestReloadThatChangesAnUpstreamCutsNoCalls reloads a config that changes
// server-everything (one more environment variable, so it is restarted)
// while four workers call echo in a loop and three 3 s operations are in
// flight: no call fails, neither those in flight (they finish on the old
// process) nor those made during the restart (they wait for the new one).
func TestReloadThatChangesAnUpstreamCutsNoCalls(t *testing.T) {
	t.Parallel()
	f := everythingFixture(t)
	c := connectStdio(t, f, client.WithLegacyProtocolOnly())
	listedNames(t, c)
	var calls, failed atomic.Int64
	var firstErr atomic.Value
	fail := func(err error) {
		failed.Add(1)
		firstErr.CompareAndSwap(nil, err.Error())
	}
	call := func(name string, args map[string]any) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		calls.Add(1)
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
		switch {
		case err != nil:
			fail(err)
		case res.IsError:
			fail(fmt.Errorf("%s: %s", name, testkit.Text(res)))
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					call("everything__echo", map[string]any{"message": "across the reload"})
				}
			}
		})
	}
	for range 3 {
		wg.Go(func() {
			call("everything__trigger-long-running-operation", map[string]any{"duration": 3, "steps": 3})
		})
	}
	time.Sleep(700 * time.Millisecond)
	data, err := os.ReadFile(f.config)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(data), serverEverything(), serverEverything()+"\n    env: {MCPWARDEN_E2E_RELOADED: \"1\"}", 1)
	if changed == string(data) {
		t.Fatal("could not change the everything server in the config")
	}
	if err := os.WriteFile(f.config, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := signalPID(f.pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second)
	close(stop)
	wg.Wait()
	connected := 0
	for _, e := range readAudit(t, f.auditPath, "upstream") {
		if e.Server == "everything" && e.Detail == "connected" {
			connected++
		}
	}
	if connected != 2 {
		t.Errorf("audit has %d connects of everything, want 2: the reload did not restart it", connected)
	}
	t.Logf("%d calls across the reload, %d failed", calls.Load(), failed.Load())
	if n := failed.Load(); n > 0 {
		t.Errorf("%d of %d calls across a reload that restarted their upstream failed; first: %v", n, calls.Load(), firstErr.Load())
	}
}
