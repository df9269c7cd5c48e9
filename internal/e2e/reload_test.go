package e2e

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// rewritePolicy replaces the policy block of the fixture's config.
func rewritePolicy(t *testing.T, f *fixture, policy string) {
	t.Helper()
	data, err := os.ReadFile(f.config)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	start := strings.Index(text, "policy:\n")
	end := strings.Index(text, "audit:\n")
	if start < 0 || end < start {
		t.Fatalf("config has no policy block before audit:\n%s", text)
	}
	tmp := f.config + ".tmp"
	if err := os.WriteFile(tmp, []byte(text[:start]+"policy:\n"+policy+"\n"+text[end:]), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, f.config); err != nil { // as editors do
		t.Fatal(err)
	}
}

// echoAllowed reports whether echo is listed and its call goes through.
func echoAllowed(t *testing.T, c *client.Client) bool {
	t.Helper()
	res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "everything__echo", Arguments: map[string]any{"message": "ping"}}})
	return err == nil && !res.IsError
}

func TestReload(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		watch   bool
		trigger func(t *testing.T, f *fixture)
	}{
		{"on SIGHUP", false, func(t *testing.T, f *fixture) {
			if err := signalPID(f.pid, syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
		}},
		{"when the watched file changes", true, func(*testing.T, *fixture) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, testkit.FreeAddr(t), "  everything:\n"+serverEverything(), `  allow: ["mcp:everything:*"]`)
			if tt.watch {
				f.serveArgs = []string{"--watch"}
			}
			url, stderr := startHTTP(t, f)
			c := connectHTTP(t, url)
			if !echoAllowed(t, c) {
				t.Fatal("echo refused before any reload")
			}

			// A call in flight when the policy changes finishes under the
			// policy it started with.
			inflight := make(chan *mcp.CallToolResult, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "everything__trigger-long-running-operation", Arguments: map[string]any{"duration": 3, "steps": 3}}})
				if err != nil {
					res = mcp.NewToolResultError(err.Error())
				}
				inflight <- res
			}()
			time.Sleep(500 * time.Millisecond)

			rewritePolicy(t, f, `  deny: ["mcp:everything:echo", "mcp:everything:trigger-long-running-operation"]
  allow: ["mcp:everything:*"]`)
			tt.trigger(t, f)
			testkit.Eventually(t, 10*time.Second, "the new policy taking effect", func() bool { return !echoAllowed(t, c) })
			if res := <-inflight; res.IsError {
				t.Errorf("the call in flight during the reload was cut: %s", testkit.Text(res))
			}

			// A bad config is refused; the running one stays.
			rewritePolicy(t, f, `  deny: ["not a rule"]`)
			tt.trigger(t, f)
			testkit.Eventually(t, 10*time.Second, "the bad config being refused", func() bool { return strings.Contains(stderr.String(), "config reload refused") })
			if echoAllowed(t, c) {
				t.Error("after a refused reload the policy before it no longer holds")
			}

			var reloads int
			for _, e := range readAudit(t, f.auditPath, "tools_changed") {
				if e.Detail == "config reloaded" {
					reloads++
				}
			}
			if reloads != 1 {
				t.Errorf("the audit log has %d reloads, want 1 (the refused one is not applied)", reloads)
			}
		})
	}
}

func TestReloadStartsAndStopsServers(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.FreeAddr(t), "  everything:\n"+serverEverything(), `  allow: ["mcp:*:*"]`)
	url, _ := startHTTP(t, f)
	c := connectHTTP(t, url)
	listed := func(name string) bool {
		res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
		if err != nil {
			return false
		}
		for _, tool := range res.Tools {
			if tool.Name == name {
				return true
			}
		}
		return false
	}
	data, err := os.ReadFile(f.config)
	if err != nil {
		t.Fatal(err)
	}
	// Replace the everything server by the filesystem server.
	text := strings.Replace(string(data), "  everything:\n"+serverEverything(), "  fs:\n"+serverFilesystem(f.sandbox), 1)
	if err := os.WriteFile(f.config, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := signalPID(f.pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the added server's tools appearing", func() bool { return listed("fs__list_allowed_directories") })
	testkit.Eventually(t, 10*time.Second, "the removed server's tools going", func() bool { return !listed("everything__echo") })
	if res := callTool(t, c, "fs__list_allowed_directories", nil); res.IsError || !strings.Contains(testkit.Text(res), f.sandbox) {
		t.Errorf("the added server does not answer: %q", testkit.Text(res))
	}
}
