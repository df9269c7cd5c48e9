package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// runBigCalls is the "bigcalls" subcommand: the memory an mcpwarden process
// needs for large calls in flight. It builds mcpwarden, serves the bench
// upstream through it over stdio, or HTTP with -http (audit to a file, as in
// production), sends -n concurrent echo calls whose message is -kib KiB (so each call holds
// that much in arguments and again in its result; with -payload, calls of
// the payload tool whose result is that many KiB), and prints the serving
// process's VmRSS before and its peak RSS (VmHWM) after, with how many calls
// succeeded or were refused. Extra arguments after -- go to the config's
// top level as YAML lines (e.g. "max_inflight_mb: 64").
//
//	go run ./bench bigcalls -n 16 -kib 4000 -http
func runBigCalls(args []string) error {
	fs := flag.NewFlagSet("bigcalls", flag.ContinueOnError)
	n := fs.Int("n", 16, "concurrent calls")
	kib := fs.Int("kib", 4000, "KiB of each call's message (and result); 4000 fits http.max_body_bytes' 4 MiB")
	payload := fs.Int("payload", 0, "call the payload tool for a result of this many KiB (small arguments) instead of echo")
	overHTTP := fs.Bool("http", false, "client and mcpwarden over streamable HTTP (each call its own request) instead of stdio")
	repo := fs.String("repo", "", "repository root (default: found from the working directory)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *repo == "" {
		var err error
		if *repo, err = findRepo(); err != nil {
			return err
		}
	}
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "mcpwarden-bigcalls-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	warden := filepath.Join(tmp, "mcpwarden")
	if err := buildWarden(ctx, *repo, warden); err != nil {
		return err
	}
	listen := "stdio"
	if *overHTTP {
		if listen, err = freeAddr(); err != nil {
			return err
		}
	}
	spec := configSpec{
		Listen:    listen,
		Servers:   map[string]string{"bench": stdioServer(self, "upstream")},
		Order:     []string{"bench"},
		Policy:    policyShape{Allow: []string{"mcp:bench:*"}},
		AuditPath: filepath.Join(tmp, "audit.jsonl"),
	}
	yaml := spec.YAML()
	for _, line := range fs.Args() {
		yaml += line + "\n"
	}
	cfg := filepath.Join(tmp, "config.yaml")
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		return err
	}
	var (
		c   *client.Client
		pid int
	)
	if *overHTTP {
		p, err := startProc("mcpwarden", filepath.Join(tmp, "mcpwarden.log"), nil, warden, "serve", "--config", cfg)
		if err != nil {
			return err
		}
		defer p.Stop()
		url := "http://" + listen + "/mcp"
		if err := waitInitialize(ctx, p, url, 60*time.Second); err != nil {
			return err
		}
		if c, err = connectHTTP(ctx, url); err != nil {
			return err
		}
		pid = p.PID()
	} else if c, pid, err = connectStdio(ctx, filepath.Join(tmp, "mcpwarden.log"), warden, "serve", "--config", cfg); err != nil {
		return err
	}
	defer c.Close()
	// One small call first, so that what follows measures the large ones.
	if _, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "bench__echo", Arguments: map[string]any{"message": "warm"}}}); err != nil {
		return err
	}
	before, err := procStatus(pid, "VmRSS:")
	if err != nil {
		return err
	}
	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "bench__echo", Arguments: map[string]any{"message": strings.Repeat("x", *kib<<10)}}}
	if *payload > 0 {
		req.Params = mcp.CallToolParams{Name: "bench__payload", Arguments: map[string]any{"kib": *payload}}
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		ok       int
		refusals []string
	)
	began := time.Now()
	for range *n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.CallTool(ctx, req)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				refusals = append(refusals, err.Error())
			case res.IsError:
				refusals = append(refusals, resultText(res))
			default:
				ok++
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(began)
	peak, err := procStatus(pid, "VmHWM:")
	if err != nil {
		return err
	}
	what := fmt.Sprintf("%d KiB (arguments and result each)", *kib)
	if *payload > 0 {
		what = fmt.Sprintf("a %d KiB result", *payload)
	}
	fmt.Printf("%s: %d concurrent calls of %s: %d ok, %d refused in %s\n", listen, *n, what, ok, len(refusals), elapsed.Round(time.Millisecond))
	fmt.Printf("mcpwarden RSS before %.1f MiB, peak %.1f MiB (+%.1f MiB, %.1f MiB per call)\n",
		mb(before), mb(peak), mb(peak-before), mb(peak-before)/float64(*n))
	if len(refusals) > 0 {
		first := refusals[0]
		if len(first) > 300 {
			first = first[:300] + "…"
		}
		fmt.Printf("first refusal: %s\n", first)
	}
	return nil
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }
