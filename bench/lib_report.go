package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// libOf is the bare-library route each mcpwarden route is read against:
// the one with the same transports on both sides.
var libOf = map[string]string{
	routeWardenStdio: routeLibStdio,
	routeWardenHTTP:  routeLibHTTP,
	routeWardenBrdg:  routeLibBrdg,
}

// libCell is the baseline's cell for mcpwarden's cell r, if it ran.
func libCell(all []result, r result) (result, bool) {
	route, ok := libOf[r.Route]
	if !ok || r.Note != "" || r.S.Calls == 0 {
		return result{}, false
	}
	l, ok := find(all, r, route)
	if !ok || l.Note != "" || l.S.Calls == 0 {
		return result{}, false
	}
	return l, true
}

func cpuMicros(s sample) string {
	d := s.CPUPerCall()
	if d < 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", float64(d)/float64(time.Microsecond))
}

// writeLibrary writes, for every mcpwarden cell, its calls/s and p50
// divided by the bare-library baseline's in the same cell (calls/s above 1
// and p50 below 1: mcpwarden ahead), and the CPU per call of each process.
func writeLibrary(w io.Writer, all []result) {
	fmt.Fprintln(w, "| workload | c | route | rules | ÷ bare library calls/s | ÷ bare library p50 | mcpwarden CPU µs/call | bare library CPU µs/call |")
	fmt.Fprintln(w, "|---|--:|---|--:|--:|--:|--:|--:|")
	for _, r := range all {
		l, ok := libCell(all, r)
		if !ok {
			continue
		}
		fmt.Fprintf(w, "| %s | %d | %s | %d | %s | %s | %s | %s |\n", r.Workload, r.Conc, r.Route, r.Rules,
			fmtRatio(ratio(r.S.CallsPerSec(), l.S.CallsPerSec())), fmtRatio(ratio(float64(r.S.P(0.5)), float64(l.S.P(0.5)))),
			cpuMicros(r.S), cpuMicros(l.S))
	}
}

// issue39Goals are issue 39's goals that the floor goals do not already
// check: against the bare library over HTTP (the bench echo to the HTTP
// upstream, and server-everything's echo over stdio behind, as the issue
// measured), CPU per echo call at 16 clients, and throughput at 64
// clients on the fast upstream against direct.
func issue39Goals(all []result) []goal {
	var goals []goal
	for _, rules := range []int{10, 1000} {
		for _, g := range []struct{ workload, route string }{
			{workloadEcho.Name, routeWardenHTTP},
			{workloadEvr.Name, routeWardenBrdg},
		} {
			goals = append(goals, libThroughputGoal(all, g.workload, g.route, rules), libLatencyGoal(all, g.workload, g.route, rules))
		}
	}
	for _, rules := range []int{10, 1000} {
		for _, g := range []struct {
			route string
			limit time.Duration
		}{{routeWardenHTTP, 90 * time.Microsecond}, {routeWardenStdio, 60 * time.Microsecond}} {
			name := fmt.Sprintf("CPU per echo call at c16, %s (%d rules) ≤ %d µs", g.route, rules, g.limit/time.Microsecond)
			r, ok := findCell(all, workloadEcho.Name, 16, g.route, rules)
			if !ok || r.S.CPUPerCall() < 0 {
				goals = append(goals, goal{Name: name, Got: "cell missing"})
				continue
			}
			goals = append(goals, goal{Name: name, Met: r.S.CPUPerCall() <= g.limit, Got: cpuMicros(r.S) + " µs"})
		}
		for _, route := range []string{routeWardenHTTP, routeWardenStdio} {
			name := fmt.Sprintf("echo at c64, %s (%d rules): calls/s ≥ 0.5× direct", route, rules)
			r, ok := findCell(all, workloadEcho.Name, 64, route, rules)
			d, okd := baseline(all, r)
			if !ok || !okd {
				goals = append(goals, goal{Name: name, Got: "cells missing"})
				continue
			}
			x := ratio(r.S.CallsPerSec(), d.S.CallsPerSec())
			goals = append(goals, goal{Name: name, Met: x >= 0.5, Got: fmtRatio(x)})
		}
	}
	return goals
}

// libThroughputGoal: mcpwarden's calls/s ≥ 1.3× the bare library's at 16
// and at 64 clients.
func libThroughputGoal(all []result, workload, route string, rules int) goal {
	name := fmt.Sprintf("%s, %s (%d rules): calls/s ≥ 1.3× the bare library's at c16 and c64", workload, route, rules)
	met, got := true, []string{}
	for _, conc := range []int{16, 64} {
		r, ok := findCell(all, workload, conc, route, rules)
		l, okl := libCell(all, r)
		if !ok || !okl {
			met = false
			got = append(got, fmt.Sprintf("c%d cells missing", conc))
			continue
		}
		x := ratio(r.S.CallsPerSec(), l.S.CallsPerSec())
		met = met && x >= 1.3
		got = append(got, fmt.Sprintf("c%d %s", conc, fmtRatio(x)))
	}
	return goal{Name: name, Met: met, Got: strings.Join(got, ", ")}
}

// libLatencyGoal: mcpwarden's p50 ≤ 0.8× the bare library's at 1 client.
func libLatencyGoal(all []result, workload, route string, rules int) goal {
	name := fmt.Sprintf("%s, %s (%d rules): p50 ≤ 0.8× the bare library's at c1", workload, route, rules)
	r, ok := findCell(all, workload, 1, route, rules)
	l, okl := libCell(all, r)
	if !ok || !okl {
		return goal{Name: name, Got: "cells missing"}
	}
	x := ratio(float64(r.S.P(0.5)), float64(l.S.P(0.5)))
	return goal{Name: name, Met: x <= 0.8, Got: fmt.Sprintf("%s (%s ms ÷ %s ms)", fmtRatio(x), ms(r.S.P(0.5)), ms(l.S.P(0.5)))}
}
