package main

// Micro-benchmarks of the per-call work the profile points at, so that the
// cost of each finding (and of its fix) can be measured on its own:
//
//	go test -run '^$' -bench . -benchmem ./bench
//
// They report costs; nothing here asserts a time.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/rules"
)

// TestMain lets the test binary act as the benchmark's stdio upstream, so
// that BenchmarkUpstreamProtocol can spawn it without the network, and as
// a stdio floor relay (MCPWARDEN_BENCH_RELAY=bytes|decode, the command to
// relay to in its arguments).
func TestMain(m *testing.M) {
	if mode := os.Getenv("MCPWARDEN_BENCH_RELAY"); mode != "" {
		if err := runRelay(append([]string{"-mode", mode, "--"}, os.Args[1:]...)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv("MCPWARDEN_BENCH_UPSTREAM") == "1" {
		if err := runUpstream(nil); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// BenchmarkRedactPerCall is the redaction one allowed echo call costs: the
// decision event's arguments and client, the result event's preview and
// client (audit.Log.Write redacts every string field of every event).
func BenchmarkRedactPerCall(b *testing.B) {
	r, err := audit.NewRedactor(audit.Config{})
	if err != nil {
		b.Fatal(err)
	}
	args := map[string]any{"message": "hello from mcpwarden bench"}
	preview := "Echo: hello from mcpwarden bench"
	b.ReportAllocs()
	for b.Loop() {
		r.Arguments(args)
		for range 2 {
			r.String("mcpwarden-bench")
			r.String("1")
		}
		r.String(preview)
		r.String("")
	}
}

// BenchmarkAuditWrite is audit.Log.Write of the two events of one call to
// a file, serially and from 16 goroutines (the log's mutex covers JSON
// encoding and the write, so parallel callers queue).
func BenchmarkAuditWrite(b *testing.B) {
	log, err := audit.Open(audit.Config{Path: filepath.Join(b.TempDir(), "audit.jsonl")}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	dec := audit.Event{Event: audit.KindDecision, Session: "s", Client: &audit.Client{Name: "mcpwarden-bench", Version: "1"},
		Server: "bench", Tool: "mcp:bench:echo", WireName: "bench__echo", Decision: "allow", Rule: "mcp:bench:echo",
		Arguments: map[string]any{"message": "hello from mcpwarden bench"}}
	n := int64(40)
	res := dec
	res.Event, res.Arguments, res.ResultBytes, res.ResultPreview = audit.KindResult, nil, &n, "Echo: hello from mcpwarden bench"
	ctx := context.Background()
	b.Run("serial", func(b *testing.B) {
		for b.Loop() {
			if err := log.Write(ctx, dec); err != nil {
				b.Fatal(err)
			}
			if err := log.Write(ctx, res); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel16", func(b *testing.B) {
		b.SetParallelism(8) // 2 cores × 8 = 16 goroutines
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := log.Write(ctx, dec); err != nil {
					b.Error(err)
					return
				}
				if err := log.Write(ctx, res); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkDecide is the rule evaluation of one echo call under the
// generated 10- and 1,000-rule policies.
func BenchmarkDecide(b *testing.B) {
	for _, n := range []int{10, 1000} {
		p := genPolicy(n)
		pol, err := rules.Compile(rules.Spec{Global: rules.PolicySpec{Default: "deny", Deny: p.Deny, Ask: p.Ask, Allow: p.Allow}})
		if err != nil {
			b.Fatal(err)
		}
		call := rules.Call{Server: "bench", Tool: "echo", Arguments: map[string]any{"message": "hello from mcpwarden bench"}}
		b.Run(fmt.Sprintf("%drules", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if v := pol.Decide(call); v.Decision != rules.Allow {
					b.Fatalf("decided %v", v.Decision)
				}
			}
		})
	}
}

// BenchmarkUpstreamProtocol is one echo call from an mcp-go client to the
// bench upstream over stdio, negotiating the legacy handshake (2025-11-25,
// what the benchmark's clients use) or the newest protocol (2026-07-28,
// what upstream.Pool negotiates with every upstream, via
// mcp.LATEST_PROTOCOL_VERSION).
func BenchmarkUpstreamProtocol(b *testing.B) {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	for _, version := range []string{mcp.ProtocolVersion20251125, mcp.LATEST_PROTOCOL_VERSION} {
		b.Run(version, func(b *testing.B) {
			t := transport.NewStdioWithOptions(self, []string{"MCPWARDEN_BENCH_UPSTREAM=1"}, nil)
			c := client.NewClient(t, client.WithProtocolVersion(version))
			ctx := context.Background()
			if err := c.Start(ctx); err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: version,
				ClientInfo: mcp.Implementation{Name: "bench", Version: "1"}}}); err != nil {
				b.Fatal(err)
			}
			if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil { // as upstream.Pool does
				b.Fatal(err)
			}
			req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "echo", Arguments: echoArgs}}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.CallTool(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
