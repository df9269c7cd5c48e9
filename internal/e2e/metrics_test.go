package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// With metrics.listen set, the running proxy serves /metrics, and a call
// through it moves the decision counter and the upstream call histogram.
func TestMetricsEndpointCountsCalls(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.FreeAddr(t), "  everything:\n"+serverEverything(), `  default: deny
  allow: ["mcp:everything:echo"]`)
	metrics := testkit.FreeAddr(t)
	f.appendConfig(t, fmt.Sprintf("metrics:\n  listen: %q\n", metrics))
	url, _ := startHTTP(t, f)
	c := connectHTTP(t, url)
	callTool(t, c, "everything__echo", map[string]any{"message": "hi"})
	callTool(t, c, "everything__get-sum", map[string]any{"a": 1, "b": 2}) // denied by default

	resp, err := http.Get("http://" + metrics + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d\n%s", resp.StatusCode, body)
	}
	for _, want := range []string{
		`mcpwarden_decisions_total{decision="allow",profile="",server="everything",tool="echo"} 1`,
		`mcpwarden_decisions_total{decision="deny",profile="",server="everything",tool="get-sum"} 1`,
		`mcpwarden_upstream_call_duration_seconds_count{outcome="ok",server="everything"} 1`,
		`mcpwarden_upstream_up{server="everything"} 1`,
		`mcpwarden_audit_write_failures_total 0`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
