//go:build profile

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/proxy"
	"github.com/mcpwarden/mcpwarden/proxy/streamable"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// runProfile is the "profile" subcommand: it runs the mcpwarden proxy
// in-process (config loading, rules, audit, upstream pool and proxy, as
// cmd/mcpwarden serve wires them) serving streamable HTTP, drives it with
// the benchmark client and writes CPU, allocation and mutex profiles of
// the load phase. Client and proxy share the process, so the profile shows
// both; filter with pprof -focus=mcpwarden or -show_from.
func runProfile(args []string) error {
	fs := flag.NewFlagSet("profile", flag.ContinueOnError)
	cpuOut := fs.String("cpuprofile", "cpu.out", "write the CPU profile to `FILE`")
	memOut := fs.String("memprofile", "mem.out", "write the allocation profile to `FILE`")
	mutexOut := fs.String("mutexprofile", "mutex.out", "write the mutex contention profile to `FILE`")
	nRules := fs.Int("rules", 1000, "policy size")
	conc := fs.Int("c", 16, "concurrent calls")
	dur := fs.Duration("d", 10*time.Second, "load duration")
	wlName := fs.String("workload", "echo", "echo, 1k or 1m")
	upKind := fs.String("upstream", "stdio", "how the proxy reaches the upstream: stdio or http (a child process either way)")
	clientKind := fs.String("client", "http", "how the client reaches the proxy: http, or stdio (pipes to ServeStdio)")
	proxyKind := fs.String("proxy", "mcpwarden", "what is profiled: mcpwarden, or bare (the bare-library baseline, over HTTP)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	w := map[string]workload{"echo": workloadEcho, "1k": workload1K, "1m": workload1M}[*wlName]
	if w.Tool == "" {
		return fmt.Errorf("unknown workload %q", *wlName)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "mcpwarden-profile-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	upSpec := upstream.Spec{Transport: upstream.TransportStdio, Command: self, Args: []string{"upstream"}}
	switch *upKind {
	case "stdio":
	case "http":
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		up, err := startProc("upstream-http", filepath.Join(tmp, "upstream.log"), nil, self, "upstream", "-http", addr)
		if err != nil {
			return err
		}
		defer up.Stop()
		if err := waitTCP(up, addr, 10*time.Second); err != nil {
			return err
		}
		upSpec = upstream.Spec{Transport: upstream.TransportHTTP, URL: "http://" + addr + "/mcp"}
	default:
		return fmt.Errorf("unknown upstream %q: want stdio or http", *upKind)
	}
	served := make(chan error, 1)
	var (
		c    *client.Client
		stop func()
	)
	switch *proxyKind {
	case "mcpwarden":
		c, stop, err = startWardenProfile(ctx, tmp, self, *nRules, upSpec, *clientKind, served)
	case "bare":
		if *clientKind != "http" {
			return errors.New("-proxy bare is served over HTTP only: write -client http")
		}
		c, stop, err = startBareProfile(ctx, upSpec, served)
	default:
		return fmt.Errorf("unknown proxy %q: want mcpwarden or bare", *proxyKind)
	}
	if err != nil {
		return err
	}
	defer stop()
	defer c.Close()

	// Warm up, then profile the load only.
	measure(ctx, c, w, wardenTool(w), *conc, budget{Duration: time.Second, MaxCalls: 1 << 30, Hard: 10 * time.Second}, nil)
	runtime.SetMutexProfileFraction(5)
	runtime.MemProfileRate = 64 << 10
	runtime.GC()
	cpuF, err := os.Create(*cpuOut)
	if err != nil {
		return err
	}
	defer cpuF.Close()
	if err := pprof.StartCPUProfile(cpuF); err != nil {
		return err
	}
	s := measure(ctx, c, w, wardenTool(w), *conc, budget{Duration: *dur, MaxCalls: 1 << 30, Hard: *dur + 30*time.Second}, nil)
	pprof.StopCPUProfile()
	for _, p := range []struct{ name, path string }{{"allocs", *memOut}, {"mutex", *mutexOut}} {
		f, err := os.Create(p.path)
		if err != nil {
			return err
		}
		if err := pprof.Lookup(p.name).WriteTo(f, 0); err != nil {
			f.Close()
			return err
		}
		f.Close()
	}
	what := fmt.Sprintf("mcpwarden, %d rules", *nRules)
	if *proxyKind == "bare" {
		what = "the bare library"
	}
	fmt.Printf("profiled %s c=%d through %s: %d calls, %.0f calls/s, p50 %s ms, p99 %s ms, %d errors %s\n",
		w.Name, *conc, what, s.Calls, s.CallsPerSec(), ms(s.P(0.5)), ms(s.P(0.99)), s.Errors, s.FirstErr)
	fmt.Printf("profiles: %s %s %s\n", *cpuOut, *memOut, *mutexOut)
	cancel()
	c.Close() // ends ServeStdio's input
	<-served
	return nil
}

// startWardenProfile runs mcpwarden in-process, as serve wires it, with a
// policy of nRules rules and the upstream up, serving the client kind; it
// returns the client and what closes the proxy's parts.
func startWardenProfile(ctx context.Context, tmp, self string, nRules int, up upstream.Spec, clientKind string, served chan error) (*client.Client, func(), error) {
	spec := configSpec{
		Listen:    "127.0.0.1:0",
		Servers:   map[string]string{"bench": stdioServer(self, "upstream")},
		Order:     []string{"bench"},
		Policy:    genPolicy(nRules),
		AuditPath: filepath.Join(tmp, "audit.jsonl"),
	}
	cfgPath := filepath.Join(tmp, "mcpwarden.yaml")
	if err := os.WriteFile(cfgPath, []byte(spec.YAML()), 0o600); err != nil {
		return nil, nil, err
	}
	cfg, err := config.Load(cfgPath, os.Environ())
	if err != nil {
		return nil, nil, err
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, nil, err
	}
	policy, err := rules.Compile(cfg.RulesSpecIn(wd))
	if err != nil {
		return nil, nil, err
	}
	log, err := audit.Open(cfg.Audit, &audit.Options{Stderr: os.Stderr})
	if err != nil {
		return nil, nil, err
	}
	pool := upstream.Start(ctx, map[string]upstream.Spec{"bench": up},
		&upstream.Options{ClientInfo: mcp.Implementation{Name: "mcpwarden", Version: "profile"}})
	stop := func() {
		pool.Close()
		log.Close()
	}
	c, err := serveWardenProfile(ctx, pool, policy, log, clientKind, served)
	if err != nil {
		stop()
		return nil, nil, err
	}
	return c, stop, nil
}

// serveWardenProfile builds the proxy on pool and serves it to one client
// of clientKind, reporting on served when serving ends.
func serveWardenProfile(ctx context.Context, pool *upstream.Pool, policy *rules.Policy, log *audit.Log, clientKind string, served chan error) (*client.Client, error) {
	if err := pool.Err("bench"); err != nil {
		return nil, err
	}
	srv, err := proxy.New(proxy.Options{Upstream: pool, Policy: policy, Audit: log, Logger: slog.New(slog.DiscardHandler), Version: "profile"})
	if err != nil {
		return nil, err
	}
	srv.UpstreamChanged(ctx, "bench") // the pool started first: expose its tools
	switch clientKind {
	case "http":
		ready := make(chan net.Addr, 1)
		go func() {
			served <- proxy.ListenAndServe(ctx, srv, "127.0.0.1:0", streamable.Options{Ready: func(a net.Addr) { ready <- a }})
		}()
		select {
		case addr := <-ready:
			return connectHTTP(ctx, "http://"+addr.String()+streamable.EndpointPath)
		case err := <-served:
			return nil, err
		}
	case "stdio":
		// The client talks to ServeStdio over pipes, as a client that
		// spawned mcpwarden would over its stdin and stdout; closing the
		// client ends ServeStdio's input.
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		go func() {
			served <- proxy.ServeStdio(ctx, srv, inR, outW)
			outW.Close()
		}()
		return start(ctx, client.NewClient(transport.NewIO(outR, inW, nil), client.WithProtocolVersion(protocolVersion)))
	}
	return nil, fmt.Errorf("unknown client %q: want http or stdio", clientKind)
}

// startBareProfile serves the bare-library baseline in-process over HTTP
// in front of the upstream up, so that its profile is read beside
// mcpwarden's.
func startBareProfile(ctx context.Context, up upstream.Spec, served chan error) (*client.Client, func(), error) {
	u := libUpstream{name: "bench", url: up.URL}
	if up.Transport == upstream.TransportStdio {
		u = libUpstream{name: "bench", argv: append([]string{up.Command}, up.Args...)}
	}
	uc, err := u.connect(ctx)
	if err != nil {
		return nil, nil, err
	}
	s := server.NewMCPServer("bench-libproxy", "1", server.WithToolCapabilities(false))
	if err := reexpose(ctx, s, u.name, uc); err != nil {
		uc.Close()
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		uc.Close()
		return nil, nil, err
	}
	go func() { served <- serveUntilDone(ctx, ln, newLibHandler(s)) }()
	c, err := connectHTTP(ctx, "http://"+ln.Addr().String()+"/mcp")
	if err != nil {
		uc.Close()
		return nil, nil, err
	}
	return c, func() { uc.Close() }, nil
}
