// Command bench measures mcpwarden against a direct connection and against
// peer proxies, in one run, and prints one markdown table. See README.md.
//
//	go run ./bench            # the full run, a few minutes on 2 cores
//	go run ./bench -quick     # a smoke run, under a minute
//	go run ./bench upstream [-http ADDR]   # the benchmark's upstream server
//	go run -tags profile ./bench profile   # mcpwarden in-process under load, with pprof
//	go run ./bench bigcalls [-n 16 -mib 4]  # peak RSS of large calls in flight
//	go run ./bench relay -mode bytes|decode -- CMD ARGS...  # a stdio floor route
//	go run ./bench rproxy -listen ADDR -to URL  # the HTTP floor route
//	go run ./bench libproxy -listen ADDR|stdio -stdio NAME=CMD... -http NAME=URL  # the bare-library baseline
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
)

func main() {
	var err error
	switch {
	case len(os.Args) > 1 && os.Args[1] == "upstream":
		err = runUpstream(os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "profile":
		err = runProfile(os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "bigcalls":
		err = runBigCalls(os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "relay":
		err = runRelay(os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "rproxy":
		err = runReverseProxy(os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "libproxy":
		err = runLibProxy(os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "replicas":
		err = runReplicas(os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "auditproof":
		err = runAuditProof(os.Args[2:])
	default:
		err = runBench(os.Args[1:])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// options of one benchmark run.
type options struct {
	quick     bool
	repo      string
	outPath   string
	noPeers   bool
	noSetup   bool
	keep      bool
	coldRuns  int
	cell      budget
	concs     []int
	ruleSizes []int
	only      []string // workloads to measure; all when empty
}

func runBench(args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var o options
	fs.BoolVar(&o.quick, "quick", false, "smoke run: short cells, under a minute")
	fs.StringVar(&o.repo, "repo", "", "repository root (default: found from the working directory)")
	fs.StringVar(&o.outPath, "o", "", "also write the table and goals to `FILE`")
	fs.BoolVar(&o.noPeers, "no-peers", false, "skip the peer proxies")
	fs.BoolVar(&o.noSetup, "no-setup", false, "do not run bench/setup and .ci/setup")
	fs.BoolVar(&o.keep, "keep", false, "keep the temp dir (configs, logs, audit logs)")
	concs := fs.String("c", "", "measure only these comma-separated concurrencies, such as `1,16`")
	only := fs.String("workloads", "", "measure only these comma-separated workloads, such as `echo,everything echo`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *only != "" {
		o.only = strings.Split(*only, ",")
	}
	o.concs = []int{1, 16, 64}
	o.ruleSizes = []int{10, 1000}
	o.cell = budget{Warmup: 250 * time.Millisecond, Duration: time.Second, MinCalls: 50, MaxCalls: 1 << 20, Hard: 15 * time.Second}
	o.coldRuns = 7
	if o.quick {
		o.concs = []int{1, 16}
		o.ruleSizes = []int{10}
		o.cell = budget{Warmup: 30 * time.Millisecond, Duration: 150 * time.Millisecond, MinCalls: 5, MaxCalls: 1 << 20, Hard: 3 * time.Second}
		o.coldRuns = 3
	}
	if *concs != "" {
		o.concs = nil
		for _, c := range strings.Split(*concs, ",") {
			n, err := strconv.Atoi(c)
			if err != nil || n < 1 {
				return fmt.Errorf("-c: %q is not a concurrency", c)
			}
			o.concs = append(o.concs, n)
		}
	}
	if o.repo == "" {
		var err error
		if o.repo, err = findRepo(); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	b := &bench{o: o}
	defer b.cleanup()
	return b.run(ctx)
}

// findRepo walks up from the working directory to the mcpwarden module root.
func findRepo() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(data), "module github.com/mcpwarden/mcpwarden\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the mcpwarden repository; pass -repo")
		}
		dir = parent
	}
}

// A bench is one run's state.
type bench struct {
	o         options
	tmp       string
	self      string // this binary, for the upstream subcommand
	warden    string // the mcpwarden binary built for this run
	everyJS   string // server-everything's entry point
	peerMods  string // .tools/bench/node_modules
	httpUp    *proc  // the bench upstream over streamable HTTP
	httpUpURL string
	results   []result
	extras    []extra
	afterLoad []extra
	idleRSS   int64
	cold      time.Duration
	procs     []*proc
	nStdio    int

	targets         []*target
	notRunRows      []result
	wardenHTTPProcs map[int]*proc // by policy size
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

func (b *bench) cleanup() {
	for _, p := range slices.Backward(b.procs) {
		p.Stop()
	}
	if b.tmp != "" && !b.o.keep {
		os.RemoveAll(b.tmp)
	} else if b.tmp != "" {
		b.logf("kept %s", b.tmp)
	}
}

func (b *bench) run(ctx context.Context) error {
	began := time.Now()
	loadBefore := loadAvg()
	var err error
	if b.tmp, err = os.MkdirTemp("", "mcpwarden-bench-"); err != nil {
		return err
	}
	if b.self, err = os.Executable(); err != nil {
		return err
	}
	b.everyJS = filepath.Join(b.o.repo, ".tools", "npm", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	b.peerMods = filepath.Join(b.o.repo, ".tools", "bench", "node_modules")
	if !b.o.noSetup {
		if _, err := os.Stat(b.everyJS); err != nil {
			if err := b.runScript(".ci/setup"); err != nil {
				return err
			}
		}
		if !b.o.noPeers {
			if err := b.runScript("bench/setup"); err != nil {
				b.logf("bench/setup failed (%v); the npm peers may be missing", err)
			}
		}
	}
	b.warden = filepath.Join(b.tmp, "mcpwarden")
	// Built as the Dockerfile builds what ships: static, without symbol
	// tables (the binary's pages are most of an idle mcpwarden's RSS).
	b.logf("building mcpwarden")
	if err := buildWarden(ctx, b.o.repo, b.warden); err != nil {
		return err
	}

	addr, err := freeAddr()
	if err != nil {
		return err
	}
	b.httpUpURL = "http://" + addr + "/mcp"
	if b.httpUp, err = b.start("upstream-http", nil, b.self, "upstream", "-http", addr); err != nil {
		return err
	}
	if err := waitInitialize(ctx, b.httpUp, b.httpUpURL, 20*time.Second); err != nil {
		return err
	}

	// Every target is opened first and stays open; then each cell (workload
	// × concurrency) is measured on every target back to back, so that the
	// ratios compare figures taken minutes, not seconds, apart only when
	// the machine itself changed.
	b.openStdio(ctx, routeDirectStdio, 0, benchWorkloads, upstreamTool, b.self, "upstream")
	b.openStdio(ctx, routeDirectStdio, 0, []workload{workloadEvr}, upstreamTool, "node", b.everyJS, "stdio")
	b.openHTTP(ctx, routeDirectHTTP, 0, benchWorkloads, upstreamTool, b.httpUpURL, b.httpUp.PID())
	b.openFloors(ctx)
	b.openLibProxy(ctx)
	for _, n := range b.o.ruleSizes {
		if err := b.openWardenStdio(ctx, n); err != nil {
			return err
		}
	}
	for _, n := range b.o.ruleSizes {
		if err := b.openWardenHTTP(ctx, n); err != nil {
			return err
		}
	}
	if !b.o.noPeers {
		b.openPeers(ctx)
	}
	for _, name := range []string{workloadEcho.Name, workload1K.Name, workload1M.Name, workloadEvr.Name} {
		if len(b.o.only) > 0 && !slices.Contains(b.o.only, name) {
			continue
		}
		for _, conc := range b.o.concs {
			for _, t := range b.targets {
				if w, ok := t.workload(name); ok && ctx.Err() == nil {
					b.cell(ctx, t, w, conc)
				}
			}
		}
	}
	for _, t := range b.targets {
		t.c.Close()
	}
	b.results = append(b.results, b.notRunRows...)
	for _, n := range b.o.ruleSizes {
		p := b.wardenHTTPProcs[n]
		rss, err := rssBytes(p.PID())
		if err != nil {
			return err
		}
		b.afterLoad = append(b.afterLoad, extra{What: fmt.Sprintf("RSS after the load, %d rules", n), Value: megabytes(rss)})
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := b.coldStart(ctx); err != nil {
		return err
	}
	b.extras = append(b.extras,
		extra{What: "RSS idle, 3 upstreams", Value: megabytes(b.idleRSS), Note: "goal < 25 MB"},
	)
	b.extras = append(b.extras, b.afterLoad...)
	b.extras = append(b.extras, extra{What: "cold start to ready (HTTP upstream already up)", Value: ms(b.cold) + " ms", Note: fmt.Sprintf("median of %d; goal < 300 ms", b.o.coldRuns)})
	b.extras = append(b.extras, b.verifyAudit())

	var out strings.Builder
	writeTable(&out, b.results, b.extras)
	out.WriteString("\nAgainst the floors (what mcpwarden adds to direct p50 ÷ what the floor route adds):\n\n")
	writeFloors(&out, b.results)
	out.WriteString("\nAgainst the bare library (mcpwarden ÷ a forwarding proxy on mcp-go's server and client, same cell):\n\n")
	writeLibrary(&out, b.results)
	out.WriteString("\nGoals:\n\n")
	writeGoals(&out, checkGoals(b.results, b.idleRSS, b.cold))
	out.WriteString("\nIssue 39's goals (besides the floor goals above):\n\n")
	writeGoals(&out, issue39Goals(b.results))
	fmt.Fprintf(&out, "\nRun: %s; %d cores, %s, %s; cells of %s after %s warm-up (at least %d calls); total %s; load average %s before, %s after.\n",
		time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(), cpuModel(), runtime.Version(), b.o.cell.Duration, b.o.cell.Warmup, b.o.cell.MinCalls, time.Since(began).Round(time.Second), loadBefore, loadAvg())
	fmt.Print(out.String())
	if b.o.outPath != "" {
		return os.WriteFile(b.o.outPath, []byte(out.String()), 0o644)
	}
	return nil
}

func (b *bench) runScript(rel string) error {
	cmd := exec.Command(filepath.Join(b.o.repo, rel))
	cmd.Dir, cmd.Stdout, cmd.Stderr = b.o.repo, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	return nil
}

// start starts a long-running child, logging to the temp dir, and stops it
// at cleanup.
func (b *bench) start(name string, env []string, command string, args ...string) (*proc, error) {
	p, err := startProc(name, filepath.Join(b.tmp, name+".log"), env, command, args...)
	if err != nil {
		return nil, err
	}
	b.procs = append(b.procs, p)
	return p, nil
}

// A target is one open client session on one route.
type target struct {
	route string
	rules int
	wls   []workload
	tool  func(workload) string
	c     *client.Client
	pid   int // the server process whose CPU time is accounted; 0 = none
}

func (t *target) workload(name string) (workload, bool) {
	for _, w := range t.wls {
		if w.Name == name {
			return w, true
		}
	}
	return workload{}, false
}

func upstreamTool(w workload) string { return w.Tool }
func wardenTool(w workload) string   { return w.Upstream + "__" + w.Tool }

// cell measures w at conc on t and records the result.
func (b *bench) cell(ctx context.Context, t *target, w workload, conc int) {
	var cpu func() (time.Duration, error)
	if t.pid > 0 {
		cpu = func() (time.Duration, error) { return cpuTime(t.pid) }
	}
	s := measure(ctx, t.c, w, t.tool(w), conc, b.o.cell, cpu)
	r := result{Workload: w.Name, Conc: conc, Route: t.route, Rules: t.rules, S: s}
	if s.Calls == 0 {
		r.Note = "every call failed: " + s.FirstErr
	}
	b.logf("%-30s %-15s c=%-2d rules=%-4d %8.0f calls/s p50 %s ms p99 %s ms cpu/call %s errors %d %s",
		t.route, w.Name, conc, t.rules, s.CallsPerSec(), ms(s.P(0.5)), ms(s.P(0.99)), s.CPUPerCall(), s.Errors, s.FirstErr)
	b.results = append(b.results, r)
}

// openStdio starts command and opens a target on it; a failure becomes
// "not run" rows.
func (b *bench) openStdio(ctx context.Context, route string, rules int, wls []workload, tool func(workload) string, command string, args ...string) {
	b.nStdio++
	c, pid, err := connectStdio(ctx, filepath.Join(b.tmp, fmt.Sprintf("stdio-%d.stderr", b.nStdio)), command, args...)
	if err != nil {
		b.logf("%s: %v", route, err)
		b.notRun(route, rules, wls, err.Error())
		return
	}
	b.targets = append(b.targets, &target{route: route, rules: rules, wls: wls, tool: tool, c: c, pid: pid})
}

// openHTTP opens a target at url, served by process pid; a failure becomes
// "not run" rows.
func (b *bench) openHTTP(ctx context.Context, route string, rules int, wls []workload, tool func(workload) string, url string, pid int) {
	c, err := connectHTTP(ctx, url)
	if err != nil {
		b.logf("%s at %s: %v", route, url, err)
		b.notRun(route, rules, wls, err.Error())
		return
	}
	b.targets = append(b.targets, &target{route: route, rules: rules, wls: wls, tool: tool, c: c, pid: pid})
}

func (b *bench) notRun(route string, rules int, wls []workload, why string) {
	for _, w := range wls {
		for _, conc := range b.o.concs {
			b.notRunRows = append(b.notRunRows, result{Workload: w.Name, Conc: conc, Route: route, Rules: rules, Note: why})
		}
	}
}

// wardenConfig writes an mcpwarden config with three upstreams (the bench
// upstream over stdio, server-everything over stdio and the bench upstream
// over HTTP) and a policy of n rules, and returns its path.
func (b *bench) wardenConfig(name, listen string, n int) (string, error) {
	spec := configSpec{
		Listen: listen,
		Servers: map[string]string{
			"bench":      stdioServer(b.self, "upstream"),
			"everything": stdioServer("node", b.everyJS, "stdio"),
			"bench-http": httpServer(b.httpUpURL),
		},
		Order:     []string{"bench", "everything", "bench-http"},
		Policy:    genPolicy(n),
		AuditPath: filepath.Join(b.tmp, name+"-audit.jsonl"),
	}
	path := filepath.Join(b.tmp, name+".yaml")
	return path, os.WriteFile(path, []byte(spec.YAML()), 0o600)
}

var (
	benchWorkloads = []workload{workloadEcho, workload1K, workload1M}
	allWorkloads   = []workload{workloadEcho, workload1K, workload1M, workloadEvr}
)

// viaHTTP is wls sent to the bench upstream over HTTP (server bench-http).
func viaHTTP(wls []workload) []workload {
	out := slices.Clone(wls)
	for i := range out {
		out[i].Upstream = "bench-http"
	}
	return out
}

func (b *bench) openWardenStdio(ctx context.Context, n int) error {
	cfg, err := b.wardenConfig(fmt.Sprintf("warden-stdio-%d", n), "stdio", n)
	if err != nil {
		return err
	}
	b.openStdio(ctx, routeWardenStdio, n, allWorkloads, wardenTool, b.warden, "serve", "--config", cfg)
	return nil
}

// openWardenHTTP starts mcpwarden serving HTTP with a policy of n rules and
// opens two targets on it: to the bench upstream over HTTP, and to the
// stdio upstreams. The first one started is also measured idle.
func (b *bench) openWardenHTTP(ctx context.Context, n int) error {
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	name := fmt.Sprintf("warden-http-%d", n)
	cfg, err := b.wardenConfig(name, addr, n)
	if err != nil {
		return err
	}
	p, err := b.start(name, nil, b.warden, "serve", "--config", cfg)
	if err != nil {
		return err
	}
	url := "http://" + addr + "/mcp"
	if err := waitInitialize(ctx, p, url, 60*time.Second); err != nil {
		return err
	}
	if b.wardenHTTPProcs == nil {
		b.wardenHTTPProcs = map[int]*proc{}
		// Idle: three upstreams connected, one probe session, nothing else.
		time.Sleep(time.Second)
		if b.idleRSS, err = rssBytes(p.PID()); err != nil {
			return err
		}
		b.logf("mcpwarden idle RSS %s", megabytes(b.idleRSS))
	}
	b.wardenHTTPProcs[n] = p
	b.openHTTP(ctx, routeWardenHTTP, n, viaHTTP(benchWorkloads), wardenTool, url, p.PID())
	b.openHTTP(ctx, routeWardenBrdg, n, allWorkloads, wardenTool, url, p.PID())
	return nil
}
