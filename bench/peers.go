package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// A peerUpstream is an upstream a peer proxy bridges: the command line it
// spawns and the workloads measured through it.
type peerUpstream struct {
	name      string
	argv      []string
	workloads []workload
}

// openPeers starts supergateway and mcp-proxy, each bridging the bench
// upstream and server-everything from stdio to streamable HTTP, and opens
// one session (one child) on each, as mcpwarden has one session per
// upstream; and records why ToolHive did not run.
func (b *bench) openPeers(ctx context.Context) {
	ups := []peerUpstream{
		{"bench", []string{b.self, "upstream"}, benchWorkloads},
		{"everything", []string{"node", b.everyJS, "stdio"}, []workload{workloadEvr}},
	}
	type peer struct {
		route string
		entry string
		argv  func(port string, up []string) []string
	}
	list := []peer{
		{routeSupergw, filepath.Join(b.peerMods, "supergateway", "dist", "index.js"), func(port string, up []string) []string {
			// Stateful: one child per session, like mcpwarden's one upstream
			// session; stateless mode would spawn a child per request.
			return []string{"--stdio", strings.Join(up, " "), "--outputTransport", "streamableHttp", "--stateful",
				"--port", port, "--streamableHttpPath", "/mcp", "--logLevel", "none"}
		}},
		{routeMCPProxy, filepath.Join(b.peerMods, "mcp-proxy", "dist", "bin", "mcp-proxy.mjs"), func(port string, up []string) []string {
			// No event store: request/response only, as mcpwarden (the
			// store would keep the last 1,000 results, 1 MiB each).
			return append([]string{"--host", "127.0.0.1", "--port", port, "--server", "stream", "--endpoint", "/mcp", "--no-eventStore", "--"}, up...)
		}},
	}
	for _, pr := range list {
		if _, err := os.Stat(pr.entry); err != nil {
			for _, up := range ups {
				b.notRun(pr.route, 0, up.workloads, "not installed (run bench/setup): "+err.Error())
			}
			continue
		}
		for _, up := range ups {
			if err := b.openPeer(ctx, pr.route, pr.entry, pr.argv, up); err != nil {
				b.logf("%s with %s: %v", pr.route, up.name, err)
				b.notRun(pr.route, 0, up.workloads, err.Error())
			}
		}
	}
	// One row: ToolHive did not run for any workload, for one reason.
	b.notRunRows = append(b.notRunRows, result{Workload: "every workload", Route: routeToolHive, Note: b.toolHiveReason()})
}

func (b *bench) openPeer(ctx context.Context, route, entry string, argv func(string, []string) []string, up peerUpstream) error {
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	_, port, _ := strings.Cut(addr, ":")
	p, err := b.start(fmt.Sprintf("%s-%s", route, up.name), nil, "node", append([]string{entry}, argv(port, up.argv)...)...)
	if err != nil {
		return err
	}
	if err := waitTCP(p, addr, 30*time.Second); err != nil {
		return err
	}
	b.openHTTP(ctx, route, 0, up.workloads, upstreamTool, "http://"+addr+"/mcp", p.PID())
	return nil
}

// toolHiveReason says why ToolHive was not measured: thv v0.63.0 could not
// be installed (the reason is in bench/setup's log), or it is installed but
// runs every MCP server in a container and there is no container engine.
func (b *bench) toolHiveReason() string {
	dest := filepath.Join(b.o.repo, ".tools", "bench")
	if _, err := os.Stat(filepath.Join(dest, "bin", "thv")); err != nil {
		log, _ := os.ReadFile(filepath.Join(dest, "thv-install.log"))
		var why []string
		for line := range strings.Lines(string(log)) {
			if strings.Contains(line, "requires go") || strings.Contains(line, "403") {
				why = append(why, strings.TrimSpace(line))
			}
		}
		n := 0
		for _, l := range why {
			if strings.Contains(l, "403") {
				n++
			}
		}
		if n > 0 {
			return fmt.Sprintf("thv v0.63.0 does not build here: it needs Go 1.27 (fetched go1.27.4) and %d of its dependency versions are refused by proxy.golang.org (403 \"not available\"); see BENCHMARKS.md", n)
		}
		return "thv v0.63.0 is not installed (bench/setup; see .tools/bench/thv-install.log)"
	}
	for _, sock := range []string{"/var/run/docker.sock", "/run/podman/podman.sock", os.Getenv("XDG_RUNTIME_DIR") + "/podman/podman.sock"} {
		if _, err := os.Stat(sock); err == nil {
			return "thv is installed and a container socket exists (" + sock + "), but the harness does not drive ToolHive yet"
		}
	}
	return "thv runs MCP servers only in containers and there is no Docker/Podman engine on this machine"
}
