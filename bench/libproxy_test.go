package main

import (
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func TestBareLibraryForwardsCallsToEveryUpstreamUnderItsPrefix(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	up := httptest.NewServer(server.NewStreamableHTTPServer(newUpstream(), server.WithEndpointPath("/mcp")))
	defer up.Close()
	s := server.NewMCPServer("bench-libproxy", "1", server.WithToolCapabilities(false))
	for _, u := range []libUpstream{
		{name: "bench", argv: []string{"env", "MCPWARDEN_BENCH_UPSTREAM=1", self}},
		{name: "bench-http", url: up.URL + "/mcp"},
	} {
		c, err := u.connect(t.Context())
		if err != nil {
			t.Fatalf("%s: %v", u.name, err)
		}
		defer c.Close()
		if err := reexpose(t.Context(), s, u.name, c); err != nil {
			t.Fatalf("%s: %v", u.name, err)
		}
	}
	front := httptest.NewServer(newLibHandler(s))
	defer front.Close()
	c, err := connectHTTP(t.Context(), front.URL+"/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	list, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := []string{"bench-http__echo", "bench-http__payload", "bench__echo", "bench__payload"}; !slices.Equal(names, want) {
		t.Errorf("tools = %v, want %v", names, want)
	}
	for _, tool := range []string{"bench__echo", "bench-http__echo"} {
		res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: map[string]any{"message": "hi \" there"}}})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if got, want := resultText(res), "Echo: hi \" there"; got != want {
			t.Errorf("%s = %q, want %q", tool, got, want)
		}
	}
	if _, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "x"}}}); err == nil {
		t.Error("echo without its server's prefix was answered; want an unknown-tool error")
	}
}

func TestBareLibraryUpstreamFlagsSayWhatToWrite(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		value string
		stdio bool
		want  libUpstream
		err   string
	}{
		{name: "a stdio command is split at spaces", value: "bench=/bin/bench upstream", stdio: true, want: libUpstream{name: "bench", argv: []string{"/bin/bench", "upstream"}}},
		{name: "an HTTP upstream keeps its URL whole", value: "up=http://127.0.0.1:1/mcp?a=b", want: libUpstream{name: "up", url: "http://127.0.0.1:1/mcp?a=b"}},
		{name: "a value without a name is refused", value: "/bin/bench", stdio: true, err: "write NAME=URL for -http, NAME=COMMAND ARGS for -stdio"},
		{name: "an empty command is refused", value: "bench= ", stdio: true, err: "write NAME=URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseLibUpstream(tt.value, tt.stdio)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil || got.name != tt.want.name || got.url != tt.want.url || !slices.Equal(got.argv, tt.want.argv) {
				t.Fatalf("parse = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// withCPU is c with cpu per call of server CPU.
func withCPU(c result, cpu time.Duration) result {
	c.S.CPU = time.Duration(c.S.Calls) * cpu
	return c
}

// libCells are mcpwarden, bare-library and direct cells of one run.
var libCells = []result{
	cell("echo", 1, routeDirectHTTP, 0, 1000, 200*time.Microsecond),
	cell("echo", 1, routeLibHTTP, 0, 500, 500*time.Microsecond),
	cell("echo", 1, routeWardenHTTP, 10, 400, 400*time.Microsecond),
	cell("echo", 16, routeDirectHTTP, 0, 4000, time.Millisecond),
	withCPU(cell("echo", 16, routeLibHTTP, 0, 1000, 2*time.Millisecond), 150*time.Microsecond),
	withCPU(cell("echo", 16, routeWardenHTTP, 10, 1500, 2*time.Millisecond), 80*time.Microsecond),
	cell("echo", 64, routeDirectHTTP, 0, 4000, 4*time.Millisecond),
	cell("echo", 64, routeLibHTTP, 0, 1000, 8*time.Millisecond),
	cell("echo", 64, routeWardenHTTP, 10, 1200, 8*time.Millisecond),
	cell("echo", 16, routeWardenStdio, 10, 1000, time.Millisecond),
	{Workload: "echo", Conc: 16, Route: routeLibStdio, Note: "libproxy did not start"},
}

func TestMcpwardenIsReadAgainstTheBareLibraryOnTheSameTransports(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	writeLibrary(&b, libCells)
	got := b.String()
	for _, want := range []string{
		"| echo | 1 | mcpwarden HTTP | 10 | 0.80× | 0.80× | 50 | 50 |\n",
		"| echo | 16 | mcpwarden HTTP | 10 | 1.50× | 1.00× | 80 | 150 |\n",
		"| echo | 64 | mcpwarden HTTP | 10 | 1.20× | 1.00× | 50 | 50 |\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks\n%s\ngot:\n%s", want, got)
		}
	}
	if strings.Contains(got, routeWardenStdio) {
		t.Errorf("a cell whose baseline did not run has a row:\n%s", got)
	}
	goals := map[string]goal{}
	for _, g := range issue39Goals(libCells) {
		goals[g.Name] = g
	}
	tests := []struct {
		name string
		met  bool
		got  string
	}{
		{"echo, mcpwarden HTTP (10 rules): calls/s ≥ 1.3× the bare library's at c16 and c64", false, "c16 1.50×, c64 1.20×"},
		{"echo, mcpwarden HTTP (10 rules): p50 ≤ 0.8× the bare library's at c1", true, "0.80× (0.400 ms ÷ 0.500 ms)"},
		{"everything echo, mcpwarden HTTP, stdio upstream (10 rules): p50 ≤ 0.8× the bare library's at c1", false, "cells missing"},
		{"CPU per echo call at c16, mcpwarden HTTP (10 rules) ≤ 90 µs", true, "80 µs"},
		{"CPU per echo call at c16, mcpwarden stdio (10 rules) ≤ 60 µs", true, "50 µs"},
		{"CPU per echo call at c16, mcpwarden HTTP (1000 rules) ≤ 90 µs", false, "cell missing"},
		{"echo at c64, mcpwarden HTTP (10 rules): calls/s ≥ 0.5× direct", false, "0.30×"},
	}
	for _, tt := range tests {
		g, ok := goals[tt.name]
		if !ok || g.Met != tt.met || g.Got != tt.got {
			t.Errorf("goal %q = %+v (found %v), want met %v, %q", tt.name, g, ok, tt.met, tt.got)
		}
	}
}
