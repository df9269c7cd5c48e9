package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// protocolVersion is what every benchmark client negotiates, so that every
// target runs the same initialize-handshake protocol (the peers' SDKs and
// the upstreams all speak it).
const protocolVersion = mcp.ProtocolVersion20251125

// A workload is one tool call, repeated.
type workload struct {
	Name     string // as shown in the table
	Upstream string // "bench" or "everything"
	Tool     string // upstream tool name
	Args     map[string]any
	// Heavy workloads get no warm-up: one round of 64 concurrent 1 MiB
	// calls takes seconds, and the cells before them warmed the path.
	Heavy bool
}

var (
	echoArgs     = map[string]any{"message": "hello from mcpwarden bench"}
	workloadEcho = workload{Name: "echo", Upstream: "bench", Tool: "echo", Args: echoArgs}
	workload1K   = workload{Name: "payload 1 KiB", Upstream: "bench", Tool: "payload", Args: map[string]any{"kib": 1}}
	workload1M   = workload{Name: "payload 1 MiB", Upstream: "bench", Tool: "payload", Args: map[string]any{"kib": 1024}, Heavy: true}
	workloadEvr  = workload{Name: "everything echo", Upstream: "everything", Tool: "echo", Args: echoArgs}
)

// newHTTPClient is the HTTP client of every streamable HTTP benchmark
// client: enough idle connections that concurrency 64 reuses connections
// instead of dialling per call (the default keeps 2 per host).
func newHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
	}}
}

// connectHTTP opens and initializes one session at url.
func connectHTTP(ctx context.Context, url string) (*client.Client, error) {
	t, err := transport.NewStreamableHTTP(url, transport.WithHTTPBasicClient(newHTTPClient()))
	if err != nil {
		return nil, err
	}
	return start(ctx, client.NewClient(t, client.WithProtocolVersion(protocolVersion)))
}

// connectStdio starts command and opens a session on its stdin/stdout,
// returning the child's pid too. Its stderr goes to stderrPath.
func connectStdio(ctx context.Context, stderrPath string, command string, args ...string) (*client.Client, int, error) {
	f, err := os.OpenFile(stderrPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, 0, err
	}
	return connectStdioTo(ctx, f, command, args...)
}

// connectStdioTo is connectStdio with the child's stderr going to f.
func connectStdioTo(ctx context.Context, f *os.File, command string, args ...string) (*client.Client, int, error) {
	var cmd *exec.Cmd
	t := transport.NewStdioWithOptions(command, nil, args, transport.WithCommandFunc(
		func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
			cmd = exec.CommandContext(ctx, command, args...)
			cmd.Env = append(os.Environ(), env...)
			cmd.Stderr = f
			return cmd, nil
		}))
	c, err := start(ctx, client.NewClient(t, client.WithProtocolVersion(protocolVersion)))
	if err != nil {
		return nil, 0, err
	}
	return c, cmd.Process.Pid, nil
}

// start starts c's transport under ctx (a stdio child lives as long as
// ctx) and initializes the session within a minute.
func start(ctx context.Context, c *client.Client) (*client.Client, error) {
	if err := c.Start(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("starting client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: protocolVersion,
		ClientInfo:      mcp.Implementation{Name: "mcpwarden-bench", Version: "1"},
	}}); err != nil {
		c.Close()
		return nil, fmt.Errorf("initializing: %w", err)
	}
	return c, nil
}

// A sample is the outcome of one cell: calls made and their latencies.
type sample struct {
	Calls     int
	Errors    int
	Elapsed   time.Duration
	Latencies []time.Duration // sorted
	FirstErr  string
	// CPU is the CPU time (user + system) the measured server process
	// spent during the cell, excluding warm-up; -1 when not measured.
	CPU time.Duration
}

// CPUPerCall is the server process's CPU time per successful call, or -1.
func (s sample) CPUPerCall() time.Duration {
	if s.CPU < 0 || s.Calls == 0 {
		return -1
	}
	return s.CPU / time.Duration(s.Calls)
}

// CallsPerSec is the throughput of s.
func (s sample) CallsPerSec() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Calls) / s.Elapsed.Seconds()
}

// P is the q-th quantile (0 < q ≤ 1) of the latencies.
func (s sample) P(q float64) time.Duration { return percentile(s.Latencies, q) }

// percentile is the nearest-rank q-quantile of sorted: the smallest value
// with at least q of the values at or below it. It is 0 for no values.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(q*float64(len(sorted)) + 0.999999999) // ceil without float noise
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// A budget bounds one cell: a warm-up, then calls for Duration, stopping
// early at MaxCalls; at least MinCalls are made however long they take (so
// that a slow cell still has a p99 worth printing), unless the cell
// overruns Hard.
type budget struct {
	Warmup   time.Duration
	Duration time.Duration
	MinCalls int
	MaxCalls int
	Hard     time.Duration
}

// measure runs w on c with conc concurrent callers for the budget b. Errors
// (transport errors and isError results) are counted, not timed. cpu, when
// not nil, reads the server process's CPU time, before and after the
// measured part.
func measure(ctx context.Context, c *client.Client, w workload, tool string, conc int, b budget, cpu func() (time.Duration, error)) sample {
	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: w.Args}}
	call := func() error {
		res, err := c.CallTool(ctx, req)
		if err != nil {
			return err
		}
		if res.IsError {
			return errors.New(resultText(res))
		}
		return nil
	}
	// Warm-up: connections, buffers and the JIT of node peers.
	if w.Heavy {
		b.Warmup = 0
	}
	warmEnd := time.Now().Add(b.Warmup)
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for b.Warmup > 0 && time.Now().Before(warmEnd) {
				if call() != nil {
					return
				}
			}
		})
	}
	wg.Wait()

	var (
		mu       sync.Mutex
		all      []time.Duration
		errs     int
		firstErr string
		started  int
	)
	cpu0, cpuErr := time.Duration(0), error(nil)
	if cpu != nil {
		cpu0, cpuErr = cpu()
	}
	begin := time.Now()
	end, hard := begin.Add(b.Duration), begin.Add(b.Hard)
	take := func() bool {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		if started >= b.MaxCalls || now.After(hard) || (now.After(end) && started >= b.MinCalls) || ctx.Err() != nil {
			return false
		}
		started++
		return true
	}
	for range conc {
		wg.Go(func() {
			local := make([]time.Duration, 0, 1024)
			for take() {
				t0 := time.Now()
				err := call()
				d := time.Since(t0)
				if err != nil {
					mu.Lock()
					errs++
					if firstErr == "" {
						firstErr = err.Error()
					}
					mu.Unlock()
					continue
				}
				local = append(local, d)
			}
			mu.Lock()
			all = append(all, local...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(begin)
	used := time.Duration(-1)
	if cpu != nil && cpuErr == nil {
		if cpu1, err := cpu(); err == nil {
			used = cpu1 - cpu0
		}
	}
	slices.Sort(all)
	return sample{Calls: len(all), Errors: errs, Elapsed: elapsed, Latencies: all, FirstErr: firstErr, CPU: used}
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	s := b.String()
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
