package telemetry_test

import (
	"context"
	"log"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/telemetry"
	"github.com/mcpwarden/mcpwarden/rules"
)

// The calls a proxy makes for one tools/call. tel may be nil.
func Example() {
	var cfg telemetry.Config
	cfg.Metrics.Listen = "127.0.0.1:0"
	tel, err := telemetry.New(telemetry.Options{Config: cfg, Servers: []string{"fs"}, ServiceVersion: "1.0.0"})
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tel.Serve(ctx) }()
	defer func() {
		stop()
		<-done
		_ = tel.Shutdown(context.Background())
	}()
	tel.SetKnownTools("fs", []string{"read_file"}) // after each tools/list of fs

	// In the tools/call handler:
	var req mcp.CallToolRequest
	ctx = tel.ExtractMeta(ctx, req.Params.Meta)
	ctx, span := tel.StartRequest(ctx, telemetry.Request{Method: "tools/call", Tool: "fs__read_file"})
	dctx, dspan := tel.StartDecision(ctx, "fs", "read_file")
	_ = dctx // passed to an ask resolver
	verdict := rules.Verdict{Decision: rules.Allow, Rule: "mcp:fs:read_*", Gate: "policy"}
	dspan.End(verdict, audit.GrantedByRule)
	tel.Decision("", "fs", "read_file", verdict.Decision)

	uctx, uspan := tel.StartUpstreamCall(ctx, "fs", "read_file")
	start := time.Now()
	meta := tel.InjectMeta(uctx, req.Params.Meta) // forwarded as params._meta
	_ = meta                                      // pool.Call(uctx, "fs", nil, params{Meta: meta}); HTTP upstreams add tel.Headers(uctx)
	var callErr error
	tel.Call("fs", time.Since(start), telemetry.ResultOutcome(false, callErr))
	uspan.End(callErr)
	span.End(callErr)
}
