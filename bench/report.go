package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Routes, as shown in the table.
const (
	routeDirectStdio  = "direct stdio"
	routeDirectHTTP   = "direct HTTP"
	routeWardenStdio  = "mcpwarden stdio"
	routeWardenHTTP   = "mcpwarden HTTP"
	routeWardenBrdg   = "mcpwarden HTTP, stdio upstream"
	routeSupergw      = "supergateway"
	routeMCPProxy     = "mcp-proxy"
	routeToolHive     = "ToolHive"
	routeByteRelay    = "byte relay stdio"
	routeDecodeRelay  = "decode relay stdio"
	routeReverseProxy = "reverse proxy HTTP"
	routeLibStdio     = "bare library stdio"
	routeLibHTTP      = "bare library HTTP"
	routeLibBrdg      = "bare library HTTP, stdio upstream"
)

// peers are the peer proxies mcpwarden HTTP is compared with, in column order.
var peers = []string{routeSupergw, routeMCPProxy, routeToolHive}

// A result is one cell of the benchmark: a workload at a concurrency
// through one route.
type result struct {
	Workload string
	Conc     int
	Route    string
	Rules    int // policy size for mcpwarden routes; 0 otherwise
	S        sample
	Note     string // why the cell has no figures, when it has none
}

// httpRoute reports whether route is reached over streamable HTTP.
func httpRoute(route string) bool {
	switch route {
	case routeDirectStdio, routeWardenStdio, routeByteRelay, routeDecodeRelay, routeLibStdio:
		return false
	}
	return true
}

// baseline returns the direct result r is compared with: direct HTTP for
// HTTP routes, direct stdio for stdio routes, falling back to direct stdio
// when the upstream has no direct HTTP cell (server-everything); base is
// that route's name.
func baseline(all []result, r result) (res result, ok bool) {
	want := []string{routeDirectStdio}
	if httpRoute(r.Route) {
		want = []string{routeDirectHTTP, routeDirectStdio}
	}
	for _, route := range want {
		for _, b := range all {
			if b.Route == route && b.Workload == r.Workload && b.Conc == r.Conc && b.Note == "" {
				return b, true
			}
		}
	}
	return result{}, false
}

// find returns the cell of route for r's workload and concurrency.
func find(all []result, r result, route string) (result, bool) {
	for _, b := range all {
		if b.Route == route && b.Workload == r.Workload && b.Conc == r.Conc {
			return b, true
		}
	}
	return result{}, false
}

// ratio is a/b, or 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d)/float64(time.Millisecond)) }

func fmtRatio(x float64) string {
	if x == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", x)
}

// An extra is a single figure reported in the table after the cells
// (memory, start time).
type extra struct {
	What  string
	Value string
	Note  string
}

// writeTable writes the markdown table: every cell with the CPU time its
// server process (the upstream for direct routes, the proxy alone for the
// others) spent per call, its ratio to
// direct (calls/s, p50 and p99; for calls/s above 1 is better, for latency
// below 1 is better), and for mcpwarden HTTP its ratio to each peer on the
// same workload and concurrency (calls/s mcpwarden÷peer, above 1 means
// mcpwarden is ahead; p50 mcpwarden÷peer, below 1 means ahead). The peers
// bridge a stdio upstream to HTTP, so they are compared with mcpwarden
// serving HTTP in front of the same stdio upstream.
func writeTable(w io.Writer, all []result, extras []extra) {
	fmt.Fprintln(w, "| workload | c | route | rules | calls/s | p50 ms | p99 ms | server CPU µs/call | ÷direct calls/s | ÷direct p50 | ÷direct p99 | ÷supergateway calls/s · p50 | ÷mcp-proxy calls/s · p50 | ÷ToolHive calls/s · p50 |")
	fmt.Fprintln(w, "|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|---|---|---|")
	for _, r := range all {
		rules := "–"
		if r.Rules > 0 {
			rules = fmt.Sprint(r.Rules)
		}
		if r.Note != "" {
			conc := "all"
			if r.Conc > 0 {
				conc = fmt.Sprint(r.Conc)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | | | | | | | | | |\n", r.Workload, conc, r.Route, rules, "not run: "+r.Note)
			continue
		}
		cpu := ""
		if d := r.S.CPUPerCall(); d >= 0 {
			cpu = fmt.Sprintf("%.0f", float64(d)/float64(time.Microsecond))
		}
		cols := []string{r.Workload, fmt.Sprint(r.Conc), r.Route, rules,
			fmt.Sprintf("%.0f", r.S.CallsPerSec()), ms(r.S.P(0.50)), ms(r.S.P(0.99)), cpu}
		if r.S.Errors > 0 {
			cols[4] += fmt.Sprintf(" (%d errors)", r.S.Errors)
		}
		if b, ok := baseline(all, r); ok && b.Route != r.Route {
			mark := ""
			if httpRoute(r.Route) && b.Route == routeDirectStdio {
				mark = " (vs stdio)"
			}
			cols = append(cols,
				fmtRatio(ratio(r.S.CallsPerSec(), b.S.CallsPerSec()))+mark,
				fmtRatio(ratio(float64(r.S.P(0.50)), float64(b.S.P(0.50)))),
				fmtRatio(ratio(float64(r.S.P(0.99)), float64(b.S.P(0.99)))))
		} else {
			cols = append(cols, "", "", "")
		}
		for _, peer := range peers {
			p, ok := find(all, r, peer)
			if r.Route != routeWardenBrdg || !ok || p.Note != "" || p.S.Calls == 0 {
				cols = append(cols, "")
				continue
			}
			cols = append(cols, fmtRatio(ratio(r.S.CallsPerSec(), p.S.CallsPerSec()))+" · "+
				fmtRatio(ratio(float64(r.S.P(0.50)), float64(p.S.P(0.50)))))
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cols, " | "))
	}
	for _, e := range extras {
		fmt.Fprintf(w, "| %s | | mcpwarden | | %s | | | | | | | %s | | |\n", e.What, e.Value, e.Note)
	}
}

// A goal is one target from issue 10, checked on the cells of one run.
type goal struct {
	Name string
	Met  bool
	Got  string
}

// checkGoals evaluates the goals on all. A goal whose cells are
// missing is reported as not met, saying so.
func checkGoals(all []result, idleRSS int64, coldStart time.Duration) []goal {
	var goals []goal
	for _, rules := range []int{10, 1000} {
		r, ok := findCell(all, "echo", 16, routeWardenHTTP, rules)
		b, okb := findCell(all, "echo", 16, routeDirectHTTP, 0)
		if !ok || !okb {
			goals = append(goals, goal{Name: fmt.Sprintf("echo HTTP c16 (%d rules): p50 ≤ 1.10×, p99 ≤ 1.25× direct", rules), Got: "cells missing"})
			continue
		}
		p50 := ratio(float64(r.S.P(0.5)), float64(b.S.P(0.5)))
		p99 := ratio(float64(r.S.P(0.99)), float64(b.S.P(0.99)))
		goals = append(goals,
			goal{Name: fmt.Sprintf("echo HTTP c16 (%d rules): p50 ≤ 1.10× direct", rules), Met: p50 <= 1.10, Got: fmtRatio(p50)},
			goal{Name: fmt.Sprintf("echo HTTP c16 (%d rules): p99 ≤ 1.25× direct", rules), Met: p99 <= 1.25, Got: fmtRatio(p99)})
	}
	worst, worstAt, n := 0.0, "", 0
	for _, r := range all {
		if (r.Route != routeWardenHTTP && r.Route != routeWardenStdio) || r.Conc != 64 || r.Note != "" {
			continue
		}
		b, ok := baseline(all, r)
		if !ok {
			continue
		}
		x := ratio(r.S.CallsPerSec(), b.S.CallsPerSec())
		if n == 0 || x < worst {
			worst, worstAt = x, fmt.Sprintf("%s, %s, %d rules", r.Workload, r.Route, r.Rules)
		}
		n++
	}
	goals = append(goals, goal{Name: "throughput at c64 ≥ 0.8× direct (every mcpwarden cell, same transport both sides)", Met: n > 0 && worst >= 0.8,
		Got: fmt.Sprintf("worst %s (%s) of %d cells", fmtRatio(worst), worstAt, n)})

	rows, ahead := 0, 0
	var behind []string
	for _, r := range all {
		if r.Route != routeWardenBrdg || r.Note != "" {
			continue
		}
		for _, peer := range peers {
			p, ok := find(all, r, peer)
			if !ok || p.Note != "" || p.S.Calls == 0 {
				continue
			}
			rows++
			if r.S.CallsPerSec() > p.S.CallsPerSec() && r.S.P(0.5) < p.S.P(0.5) {
				ahead++
			} else {
				behind = append(behind, fmt.Sprintf("%s c%d %d rules vs %s", r.Workload, r.Conc, r.Rules, peer))
			}
		}
	}
	got := fmt.Sprintf("ahead (more calls/s and lower p50) on %d of %d comparisons", ahead, rows)
	if len(behind) > 0 {
		got += "; behind on: " + strings.Join(behind, ", ")
	}
	goals = append(goals, goal{Name: "mcpwarden (HTTP, stdio upstream) ahead of every peer that ran", Met: rows > 0 && ahead == rows, Got: got})
	goals = append(goals,
		goal{Name: "idle RSS with 3 upstreams < 25 MB", Met: idleRSS > 0 && idleRSS < 25e6, Got: megabytes(idleRSS)},
		goal{Name: "cold start < 300 ms", Met: coldStart > 0 && coldStart < 300*time.Millisecond, Got: ms(coldStart) + " ms"})
	return append(goals, floorGoals(all)...)
}

func findCell(all []result, workload string, conc int, route string, rules int) (result, bool) {
	for _, r := range all {
		if r.Workload == workload && r.Conc == conc && r.Route == route && r.Rules == rules && r.Note == "" {
			return r, true
		}
	}
	return result{}, false
}

func megabytes(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

func writeGoals(w io.Writer, goals []goal) {
	for _, g := range goals {
		mark := "NOT MET"
		if g.Met {
			mark = "met"
		}
		fmt.Fprintf(w, "- %s: **%s** (%s)\n", g.Name, mark, g.Got)
	}
}
