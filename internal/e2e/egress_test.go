package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// TestSandboxedServerReachesOnlyWhatThePolicyAllows runs goserver
// sandboxed (network: proxy, the default) behind mcpwarden serve, with a
// policy that allows its fetch tool and a connection to one address: the
// allowed connection is carried and audited with what it carried, one to
// another address is refused by the policy and audited, and the server
// cannot go around its proxy.
func TestSandboxedServerReachesOnlyWhatThePolicyAllows(t *testing.T) {
	t.Parallel()
	port := testkit.OutsideHost(t)
	f := newFixture(t, "stdio", fmt.Sprintf("  go:\n    command: %q", goServer.binary(t)), fmt.Sprintf(`  default: deny
  allow:
    - "mcp:go:fetch"
    - "mcp:go:network/connect:host=127.0.0.1:port=%d"`, port))
	c := connectStdio(t, f)
	fetch := func(url string) string {
		return testkit.Text(testkit.CallTool(t, c, "go__fetch", map[string]any{"url": url}))
	}

	allowed := fmt.Sprintf("http://127.0.0.1:%d/", port)
	if got := fetch(allowed); !strings.Contains(got, "200 hello from outside") {
		t.Fatalf("the allowed address through the proxy: %q, want the page", got)
	}
	// The same host on another port, and another loopback address, are
	// not what the rule names: the default denies them.
	for _, url := range []string{fmt.Sprintf("http://127.0.0.1:%d/", port+1), fmt.Sprintf("http://127.0.0.2:%d/", port)} {
		if got := fetch(url); !strings.Contains(got, "403") {
			t.Errorf("%s through the proxy: %q, want the proxy's 403", url, got)
		}
	}

	decisions := map[string]string{}
	for _, e := range readAudit(t, f.auditPath, "decision") {
		if e.Tool == "mcp:go:network/connect" {
			decisions[fmt.Sprint(e.Arguments["host"], ":", e.Arguments["port"])] = e.Decision
		}
	}
	want := map[string]string{
		fmt.Sprintf("127.0.0.1:%d", port):   "allow",
		fmt.Sprintf("127.0.0.1:%d", port+1): "deny",
		fmt.Sprintf("127.0.0.2:%d", port):   "deny",
	}
	for endpoint, d := range want {
		if decisions[endpoint] != d {
			t.Errorf("audit decision for %s = %q, want %q (all: %v)", endpoint, decisions[endpoint], d, decisions)
		}
	}
	testkit.Eventually(t, 10*time.Second, "a result event of the carried connection", func() bool {
		for _, e := range readAudit(t, f.auditPath, "result") {
			if e.Tool == "mcp:go:network/connect" && strings.Contains(e.Detail, "carried") && e.Bytes != nil && *e.Bytes > 0 {
				return true
			}
		}
		return false
	})
}

// TestSandboxedServerCannotGoAroundItsProxy: dialling by itself (as a
// database driver or a raw socket does) the server reaches nothing, not
// even the address the policy allows it through the proxy.
func TestSandboxedServerCannotGoAroundItsProxy(t *testing.T) {
	t.Parallel()
	port := testkit.OutsideHost(t)
	f := newFixture(t, "stdio", fmt.Sprintf("  go:\n    command: %q", goServer.binary(t)), fmt.Sprintf(`  default: deny
  allow:
    - "mcp:go:fetch"
    - "mcp:go:network/connect:host=127.0.0.1:port=%d"`, port))
	c := connectStdio(t, f)
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	res := testkit.CallTool(t, c, "go__fetch", map[string]any{"url": url, "direct": true})
	if got := testkit.Text(res); !res.IsError || strings.Contains(got, "hello from outside") {
		t.Fatalf("a direct dial to %s from the sandbox: %q, want it to fail", url, got)
	}
	if got := testkit.Text(testkit.CallTool(t, c, "go__fetch", map[string]any{"url": url})); !strings.Contains(got, "hello from outside") {
		t.Fatalf("through the proxy: %q, want the page (the direct dial failed for the right reason)", got)
	}
}
