package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// added is how much r's p50 exceeds that of the direct route it is
// compared with, or false when there is no direct cell.
func added(all []result, r result) (time.Duration, bool) {
	b, ok := baseline(all, r)
	if !ok || r.Note != "" || r.S.Calls == 0 {
		return 0, false
	}
	return r.S.P(0.5) - b.S.P(0.5), true
}

// floorRatio is what r adds to direct p50 ÷ what the floor route adds for
// the same workload and concurrency. It is not ok when a cell is missing or
// the floor adds nothing measurable (its p50 is at or below direct's, which
// happens on a busy machine).
func floorRatio(all []result, r result, floor string) (x float64, floorAdded time.Duration, ok bool) {
	f, found := find(all, r, floor)
	if !found {
		return 0, 0, false
	}
	a, okA := added(all, r)
	fa, okF := added(all, f)
	if !okA || !okF || fa <= 0 {
		return 0, fa, false
	}
	return float64(a) / float64(fa), fa, true
}

// floorsOf are the floor routes each mcpwarden route is read against: the
// stdio relays for stdio, the bare reverse proxy for HTTP to an HTTP
// upstream (the route whose transports match it).
var floorsOf = map[string][]string{
	routeWardenStdio: {routeDecodeRelay, routeByteRelay},
	routeWardenHTTP:  {routeReverseProxy},
}

// writeFloors writes, for every mcpwarden stdio and HTTP cell, what it adds
// to direct p50 and that divided by what each floor route adds in the same
// cell: 1.5× means mcpwarden adds half as much again as the floor.
func writeFloors(w io.Writer, all []result) {
	fmt.Fprintln(w, "| workload | c | route | rules | added p50 ms | ÷ decode relay added (its ms) | ÷ byte relay added (its ms) | ÷ reverse proxy added (its ms) |")
	fmt.Fprintln(w, "|---|--:|---|--:|--:|--:|--:|--:|")
	for _, r := range all {
		floors, ok := floorsOf[r.Route]
		a, okA := added(all, r)
		if !ok || !okA {
			continue
		}
		cols := []string{r.Workload, fmt.Sprint(r.Conc), r.Route, fmt.Sprint(r.Rules), ms(a)}
		for _, floor := range []string{routeDecodeRelay, routeByteRelay, routeReverseProxy} {
			if !slices.Contains(floors, floor) {
				cols = append(cols, "")
				continue
			}
			x, fa, ok := floorRatio(all, r, floor)
			switch {
			case ok:
				cols = append(cols, fmt.Sprintf("%s (%s)", fmtRatio(x), ms(fa)))
			case fa != 0:
				cols = append(cols, fmt.Sprintf("– (floor adds %s)", ms(fa)))
			default:
				cols = append(cols, "–")
			}
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cols, " | "))
	}
}

// floorGoals are issue 21's latency goals: at one client, mcpwarden adds at
// most 1.5× what the decode relay adds over stdio (server-everything's
// echo, as the issue measured) and 1.2× what a bare reverse proxy adds over
// HTTP (the bench echo).
func floorGoals(all []result) []goal {
	var goals []goal
	for _, g := range []struct {
		workload, route, floor string
		limit                  float64
	}{
		{workloadEvr.Name, routeWardenStdio, routeDecodeRelay, 1.5},
		{workloadEcho.Name, routeWardenHTTP, routeReverseProxy, 1.2},
	} {
		for _, rules := range []int{10, 1000} {
			name := fmt.Sprintf("%s, %s c1 (%d rules): added p50 ≤ %.1f× the %s's", g.workload, g.route, rules, g.limit, g.floor)
			r, ok := findCell(all, g.workload, 1, g.route, rules)
			if !ok {
				goals = append(goals, goal{Name: name, Got: "cells missing"})
				continue
			}
			x, fa, ok := floorRatio(all, r, g.floor)
			if !ok {
				goals = append(goals, goal{Name: name, Got: fmt.Sprintf("no ratio: the floor's cell is missing or adds %s ms", ms(fa))})
				continue
			}
			a, _ := added(all, r)
			goals = append(goals, goal{Name: name, Met: x <= g.limit, Got: fmt.Sprintf("%s (%s ms ÷ %s ms)", fmtRatio(x), ms(a), ms(fa))})
		}
	}
	return goals
}
