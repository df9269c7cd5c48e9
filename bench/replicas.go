package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/haproxy"
)

// runReplicas is `bench replicas`: the throughput of mcpwarden replicas
// sharing their state in redis-server behind HAProxy (round robin, no
// affinity), one replica against three, on this machine. Both runs have
// the same hops (client, HAProxy, mcpwarden, Redis, the bench upstream
// over stdio) so the ratio is the replicas' alone. It prints a markdown
// table. It needs redis-server and /usr/sbin/haproxy (.ci/setup installs
// both as root) and is not run in CI.
func runReplicas(args []string) error {
	fs := flag.NewFlagSet("replicas", flag.ContinueOnError)
	conc := fs.Int("c", 64, "calls in flight, on one client session")
	dur := fs.Duration("d", 5*time.Second, "how long each run measures")
	rules := fs.Int("rules", 10, "rules in the policy")
	keep := fs.Bool("keep", false, "keep the temp dir (configs, audit logs, process logs)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	repo, err := findRepo()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "mcpwarden-bench-replicas-")
	if err != nil {
		return err
	}
	if !*keep {
		defer os.RemoveAll(tmp)
	} else {
		fmt.Fprintln(os.Stderr, "keeping", tmp)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	warden := filepath.Join(tmp, "mcpwarden")
	if err := buildWarden(ctx, repo, warden); err != nil {
		return err
	}

	rows := []string{
		"| replicas | calls/s | p50 | p99 | errors | ratio to 1 |",
		"|---|---|---|---|---|---|",
	}
	var one float64
	for _, n := range []int{1, 3} {
		s, err := measureReplicas(ctx, tmp, warden, self, n, *rules, *conc, *dur)
		if err != nil {
			return fmt.Errorf("%d replicas: %w", n, err)
		}
		if n == 1 {
			one = s.CallsPerSec()
		}
		rows = append(rows, fmt.Sprintf("| %d | %.0f | %s | %s | %d | %.2f× |", n, s.CallsPerSec(), s.P(0.5).Round(10*time.Microsecond), s.P(0.99).Round(10*time.Microsecond), s.Errors, s.CallsPerSec()/one))
	}
	fmt.Printf("echo through HAProxy, c=%d, %d rules, shared state in redis-server, %s, %d CPUs\n\n%s\n", *conc, *rules, *dur, runtime.NumCPU(), strings.Join(rows, "\n"))
	return nil
}

// measureReplicas starts redis-server, n replicas and HAProxy, measures
// echo calls through the balancer, and stops them all.
func measureReplicas(ctx context.Context, tmp, warden, self string, n, rules, conc int, dur time.Duration) (sample, error) {
	dir := filepath.Join(tmp, fmt.Sprintf("replicas-%d", n))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return sample{}, err
	}
	var procs []*proc
	defer func() {
		for _, p := range procs {
			p.Stop()
		}
	}()
	start := func(name string, env []string, command string, args ...string) (*proc, error) {
		p, err := startProc(name, filepath.Join(dir, name+".log"), env, command, args...)
		if err == nil {
			procs = append(procs, p)
		}
		return p, err
	}
	redisAddr, err := freeAddr()
	if err != nil {
		return sample{}, err
	}
	host, port, _ := net.SplitHostPort(redisAddr)
	redis, err := start("redis", nil, "redis-server", "--bind", host, "--port", port, "--save", "", "--appendonly", "no", "--dir", dir)
	if err != nil {
		return sample{}, err
	}
	if err := waitTCP(redis, redisAddr, 10*time.Second); err != nil {
		return sample{}, err
	}
	spec := configSpec{
		Listen:    "127.0.0.1:1", // each replica's MCPWARDEN_LISTEN replaces it
		Servers:   map[string]string{"bench": stdioServer(self, "upstream")},
		Order:     []string{"bench"},
		Policy:    genPolicy(rules),
		AuditPath: filepath.Join(dir, "audit.jsonl"),
	}
	cfg := filepath.Join(dir, "mcpwarden.yaml")
	text := spec.YAML() + fmt.Sprintf("state: { url: %s }\n", yamlQuote("redis://"+redisAddr))
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		return sample{}, err
	}
	var backends []string
	for i := range n {
		addr, err := freeAddr()
		if err != nil {
			return sample{}, err
		}
		p, err := start(fmt.Sprintf("replica-%d", i), []string{
			"MCPWARDEN_LISTEN=" + addr,
			"MCPWARDEN_REPLICA=" + fmt.Sprintf("replica-%d", i),
			"MCPWARDEN_AUDIT__PATH=" + filepath.Join(dir, fmt.Sprintf("audit-%d.jsonl", i)),
		}, warden, "serve", "--config", cfg)
		if err != nil {
			return sample{}, err
		}
		if err := waitInitialize(ctx, p, "http://"+addr+"/mcp", 60*time.Second); err != nil {
			return sample{}, err
		}
		backends = append(backends, addr)
	}
	lbAddr, err := freeAddr()
	if err != nil {
		return sample{}, err
	}
	lbCfg := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(lbCfg, []byte(haproxy.Config(lbAddr, backends)), 0o600); err != nil {
		return sample{}, err
	}
	lb, err := start("haproxy", nil, haproxy.Bin, "-db", "-f", lbCfg)
	if err != nil {
		return sample{}, err
	}
	if err := waitTCP(lb, lbAddr, 10*time.Second); err != nil {
		return sample{}, err
	}
	url := "http://" + lbAddr + "/mcp"
	if err := waitInitialize(ctx, lb, url, 30*time.Second); err != nil {
		return sample{}, err
	}
	c, err := connectHTTP(ctx, url)
	if err != nil {
		return sample{}, err
	}
	defer c.Close()
	return measure(ctx, c, workloadEcho, wardenTool(workloadEcho), conc,
		budget{Warmup: time.Second, Duration: dur, MinCalls: 50, MaxCalls: 1 << 30, Hard: dur + 15*time.Second}, nil), nil
}
