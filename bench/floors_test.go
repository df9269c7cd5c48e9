package main

import (
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// callEcho calls the bench upstream's echo through c and checks the answer.
func callEcho(t *testing.T, c *client.Client) {
	t.Helper()
	for _, msg := range []string{"hello", "quotes \" and \\ and\nnewlines and \u2028 and <html>"} {
		res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": msg}}})
		if err != nil {
			t.Fatalf("echo: %v", err)
		}
		if got, want := resultText(res), "Echo: "+msg; got != want {
			t.Fatalf("echo = %q, want %q", got, want)
		}
	}
}

func TestRelaysCarryCallsToTheUpstream(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []relayMode{relayBytes, relayDecode} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			tr := transport.NewStdioWithOptions(self, []string{"MCPWARDEN_BENCH_RELAY=" + string(mode)},
				[]string{"env", "-u", "MCPWARDEN_BENCH_RELAY", "MCPWARDEN_BENCH_UPSTREAM=1", self})
			c, err := start(t.Context(), client.NewClient(tr, client.WithProtocolVersion(protocolVersion)))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			callEcho(t, c)
		})
	}
}

func TestReverseProxyCarriesCallsToTheUpstream(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(server.NewStreamableHTTPServer(newUpstream(), server.WithEndpointPath("/mcp")))
	defer up.Close()
	u, err := url.Parse(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	rp := httptest.NewServer(newReverseProxy(u))
	defer rp.Close()
	c, err := connectHTTP(t.Context(), rp.URL+"/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	callEcho(t, c)
}

// floorCells are mcpwarden, direct and floor cells of one run at c1.
var floorCells = []result{
	cell("everything echo", 1, routeDirectStdio, 0, 100, 200*time.Microsecond),
	cell("everything echo", 1, routeDecodeRelay, 0, 100, 400*time.Microsecond),
	cell("everything echo", 1, routeByteRelay, 0, 100, 450*time.Microsecond),
	cell("everything echo", 1, routeWardenStdio, 10, 100, 500*time.Microsecond),
	cell("everything echo", 1, routeWardenStdio, 1000, 100, 800*time.Microsecond),
	cell("echo", 1, routeDirectHTTP, 0, 100, 300*time.Microsecond),
	cell("echo", 1, routeReverseProxy, 0, 100, 250*time.Microsecond),
	cell("echo", 1, routeWardenHTTP, 10, 100, 700*time.Microsecond),
}

func TestFloorsAreReadAsAddedOverDirect(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	writeFloors(&b, floorCells)
	got := b.String()
	for _, want := range []string{
		// (500-200) ÷ (400-200) and ÷ (450-200).
		"| everything echo | 1 | mcpwarden stdio | 10 | 0.300 | 1.50× (0.200) | 1.20× (0.250) |  |\n",
		"| everything echo | 1 | mcpwarden stdio | 1000 | 0.600 | 3.00× (0.200) | 2.40× (0.250) |  |\n",
		// The reverse proxy was faster than direct: no ratio, and why.
		"| echo | 1 | mcpwarden HTTP | 10 | 0.400 |  |  | – (floor adds -0.050) |\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("floors lack\n%s\ngot:\n%s", want, got)
		}
	}
	goals := map[string]goal{}
	for _, g := range floorGoals(floorCells) {
		goals[g.Name] = g
	}
	tests := []struct {
		name string
		met  bool
		got  string
	}{
		{"everything echo, mcpwarden stdio c1 (10 rules): added p50 ≤ 1.5× the decode relay stdio's", true, "1.50× (0.300 ms ÷ 0.200 ms)"},
		{"everything echo, mcpwarden stdio c1 (1000 rules): added p50 ≤ 1.5× the decode relay stdio's", false, "3.00× (0.600 ms ÷ 0.200 ms)"},
		{"echo, mcpwarden HTTP c1 (10 rules): added p50 ≤ 1.2× the reverse proxy HTTP's", false, "no ratio: the floor's cell is missing or adds -0.050 ms"},
		{"echo, mcpwarden HTTP c1 (1000 rules): added p50 ≤ 1.2× the reverse proxy HTTP's", false, "cells missing"},
	}
	for _, tt := range tests {
		g, ok := goals[tt.name]
		if !ok || g.Met != tt.met || g.Got != tt.got {
			t.Errorf("goal %q = %+v (found %v), want met %v, %q", tt.name, g, ok, tt.met, tt.got)
		}
	}
}
