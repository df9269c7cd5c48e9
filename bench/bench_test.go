package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/rules"
)

func durations(ms ...int) []time.Duration {
	out := make([]time.Duration, len(ms))
	for i, m := range ms {
		out[i] = time.Duration(m) * time.Millisecond
	}
	return out
}

func TestPercentileIsNearestRank(t *testing.T) {
	t.Parallel()
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		{"no values give zero", nil, 0.5, 0},
		{"one value is every percentile", durations(7), 0.99, 7 * time.Millisecond},
		{"p50 of an even count is the lower middle", durations(1, 2, 3, 4), 0.5, 2 * time.Millisecond},
		{"p50 of an odd count is the middle", durations(1, 2, 3, 4, 5), 0.5, 3 * time.Millisecond},
		{"p99 of 100 values is the 99th", durations(hundred...), 0.99, 99 * time.Millisecond},
		{"p100 is the maximum", durations(hundred...), 1, 100 * time.Millisecond},
		{"p99 of 10 values is the maximum", durations(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.99, 10 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := percentile(tt.sorted, tt.q); got != tt.want {
				t.Errorf("percentile(%v, %v) = %v, want %v", tt.sorted, tt.q, got, tt.want)
			}
		})
	}
}

// cell is a result with n calls of latency lat over one second.
func cell(workload string, conc int, route string, rules, n int, lat time.Duration) result {
	l := make([]time.Duration, n)
	for i := range l {
		l[i] = lat
	}
	return result{Workload: workload, Conc: conc, Route: route, Rules: rules, S: sample{Calls: n, Elapsed: time.Second, Latencies: l, CPU: time.Duration(n) * 50 * time.Microsecond}}
}

var fixed = []result{
	cell("echo", 16, routeDirectHTTP, 0, 1000, 2*time.Millisecond),
	cell("echo", 16, routeWardenHTTP, 10, 900, 2100*time.Microsecond),
	cell("echo", 16, routeWardenBrdg, 10, 800, 3*time.Millisecond),
	cell("echo", 16, routeSupergw, 0, 400, 6*time.Millisecond),
	{Workload: "echo", Conc: 16, Route: routeMCPProxy, Note: "not installed"},
	cell("everything echo", 16, routeDirectStdio, 0, 500, 4*time.Millisecond),
	cell("everything echo", 16, routeWardenBrdg, 10, 250, 8*time.Millisecond),
	cell("echo", 64, routeDirectHTTP, 0, 1000, 8*time.Millisecond),
	cell("echo", 64, routeWardenHTTP, 10, 850, 9*time.Millisecond),
}

func TestTableRatiosAgainstDirectAndPeers(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	writeTable(&b, fixed, []extra{{What: "RSS idle, 3 upstreams", Value: "12.0 MB", Note: "goal < 25 MB"}})
	got := b.String()
	for _, want := range []string{
		"| echo | 16 | direct HTTP | – | 1000 | 2.000 | 2.000 | 50 |  |  |  |  |  |  |\n",
		"| echo | 16 | mcpwarden HTTP | 10 | 900 | 2.100 | 2.100 | 50 | 0.90× | 1.05× | 1.05× |  |  |  |\n",
		// Compared with the peers that ran: 800/400 calls/s, 3/6 ms.
		"| echo | 16 | mcpwarden HTTP, stdio upstream | 10 | 800 | 3.000 | 3.000 | 50 | 0.80× | 1.50× | 1.50× | 2.00× · 0.50× |  |  |\n",
		"| echo | 16 | mcp-proxy | – | not run: not installed | | | | | | | | | |\n",
		// No direct HTTP cell for server-everything: the stdio one is the base.
		"| everything echo | 16 | mcpwarden HTTP, stdio upstream | 10 | 250 | 8.000 | 8.000 | 50 | 0.50× (vs stdio) | 2.00× | 2.00× |  |  |  |\n",
		"| RSS idle, 3 upstreams | | mcpwarden | | 12.0 MB |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks\n%s\ngot:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "\n"); n != 2+len(fixed)+1 {
		t.Errorf("table has %d lines, want %d", n, 2+len(fixed)+1)
	}
}

func TestGoalsOnFixedData(t *testing.T) {
	t.Parallel()
	goals := checkGoals(fixed, 12e6, 40*time.Millisecond)
	got := map[string]goal{}
	for _, g := range goals {
		got[g.Name] = g
	}
	tests := []struct {
		name    string
		met     bool
		gotText string
	}{
		{"echo HTTP c16 (10 rules): p50 ≤ 1.10× direct", true, "1.05×"},
		{"echo HTTP c16 (10 rules): p99 ≤ 1.25× direct", true, "1.05×"},
		{"echo HTTP c16 (1000 rules): p50 ≤ 1.10× direct", false, "cells missing"},
		{"throughput at c64 ≥ 0.8× direct (every mcpwarden cell, same transport both sides)", true, "worst 0.85× (echo, mcpwarden HTTP, 10 rules) of 1 cells"},
		{"mcpwarden (HTTP, stdio upstream) ahead of every peer that ran", true, "ahead (more calls/s and lower p50) on 1 of 1 comparisons"},
		{"idle RSS with 3 upstreams < 25 MB", true, "12.0 MB"},
		{"cold start < 300 ms", true, "40.000 ms"},
	}
	for _, tt := range tests {
		g, ok := got[tt.name]
		if strings.Contains(tt.gotText, "missing") {
			g, ok = got["echo HTTP c16 (1000 rules): p50 ≤ 1.10×, p99 ≤ 1.25× direct"], true
		}
		if !ok {
			t.Errorf("no goal %q in %+v", tt.name, goals)
			continue
		}
		if g.Met != tt.met || g.Got != tt.gotText {
			t.Errorf("goal %q = met %v (%s), want met %v (%s)", tt.name, g.Met, g.Got, tt.met, tt.gotText)
		}
	}
}

func TestGeneratedPoliciesHaveTheirSizeAndAllowTheMeasuredTools(t *testing.T) {
	t.Parallel()
	for _, n := range []int{10, 1000} {
		p := genPolicy(n)
		if p.Len() != n {
			t.Errorf("genPolicy(%d) has %d rules", n, p.Len())
		}
		seen := map[string]bool{}
		for _, r := range append(append(append([]string{}, p.Deny...), p.Ask...), p.Allow...) {
			if seen[r] {
				t.Errorf("genPolicy(%d) repeats %q", n, r)
			}
			seen[r] = true
		}
		for _, tool := range []string{"mcp:bench:echo", "mcp:bench:payload", "mcp:everything:echo", "mcp:bench-http:*"} {
			if !seen[tool] {
				t.Errorf("genPolicy(%d) does not allow %s", n, tool)
			}
		}
	}
}

// TestGeneratedConfigDecidesTheMeasuredCallsAllow loads a generated config
// as mcpwarden does and checks that the benchmark's calls are allowed, so
// that every measured call is forwarded rather than refused.
func TestGeneratedConfigDecidesTheMeasuredCallsAllow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec := configSpec{
		Listen: "127.0.0.1:8765",
		Servers: map[string]string{
			"bench":      stdioServer("/bin/true", "upstream"),
			"everything": stdioServer("node", "index.js", "stdio"),
			"bench-http": httpServer("http://127.0.0.1:1/mcp"),
		},
		Order:     []string{"bench", "everything", "bench-http"},
		Policy:    genPolicy(1000),
		AuditPath: filepath.Join(dir, "audit.jsonl"),
	}
	path := filepath.Join(dir, "mcpwarden.yaml")
	if err := os.WriteFile(path, []byte(spec.YAML()), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatalf("generated config does not load: %v\n%s", err, spec.YAML())
	}
	p, err := rules.Compile(cfg.RulesSpecIn(dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range append(allWorkloads, viaHTTP(benchWorkloads)...) {
		args := map[string]any{}
		for k, v := range w.Args {
			if n, ok := v.(int); ok {
				v = float64(n) // as decoded from JSON
			}
			args[k] = v
		}
		v := p.Decide(rules.Call{Server: w.Upstream, Tool: w.Tool, Arguments: args})
		if v.Decision != rules.Allow {
			t.Errorf("%s on %s is decided %v by %q, want allow", w.Tool, w.Upstream, v.Decision, v.Rule)
		}
	}
}

func TestUpstreamEchoesAndReturnsPayloadSize(t *testing.T) {
	t.Parallel()
	c, err := client.NewInProcessClient(newUpstream())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := start(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		tool    string
		args    map[string]any
		wantLen int
		prefix  string
	}{
		{"echo returns the message", "echo", map[string]any{"message": "hi"}, len("Echo: hi"), "Echo: hi"},
		{"payload 1 returns 1 KiB", "payload", map[string]any{"kib": 1}, 1 << 10, "abcdef"},
		{"payload 1024 returns 1 MiB", "payload", map[string]any{"kib": 1024}, 1 << 20, "abcdef"},
	}
	for _, tt := range tests {
		res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tt.tool, Arguments: tt.args}})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		text := res.Content[0].(mcp.TextContent).Text
		if res.IsError || len(text) != tt.wantLen || !strings.HasPrefix(text, tt.prefix) {
			t.Errorf("%s: got isError %v, %d bytes starting %.10q", tt.name, res.IsError, len(text), text)
		}
	}
}

func TestParseKB(t *testing.T) {
	t.Parallel()
	if got, err := parseKB("   17280 kB"); err != nil || got != 17280<<10 {
		t.Errorf("parseKB = %d, %v", got, err)
	}
	if _, err := parseKB("17280"); err == nil {
		t.Error("parseKB without unit did not fail")
	}
}

func TestParseStatCPUCountsFromTheCommandName(t *testing.T) {
	t.Parallel()
	// A command name with a space and a parenthesis must not shift fields.
	stat := "4242 (my (bin) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 37 0 0 20 0 9 0 12345 0 0"
	got, err := parseStatCPU(stat)
	if err != nil || got != 287*clockTick {
		t.Errorf("parseStatCPU = %v, %v; want %v", got, err, 287*clockTick)
	}
	if _, err := parseStatCPU("4242 (x) S 1"); err == nil {
		t.Error("parseStatCPU of a short line did not fail")
	}
}
