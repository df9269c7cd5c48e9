package telemetry

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// The paths of the health endpoints Serve serves next to MetricsPath.
const (
	// ReadyPath answers 200 when this replica can serve (every check
	// passes) and 503 otherwise, listing each check: the probe a load
	// balancer or a Kubernetes readinessProbe uses to send requests only
	// to replicas that can decide them.
	ReadyPath = "/readyz"
	// LivePath answers 200 while the process serves HTTP at all.
	LivePath = "/livez"
)

// ReadyTimeout bounds one readiness probe's checks.
const ReadyTimeout = 2 * time.Second

// A Check is one condition of readiness: Run returns nil when it holds.
// Name says what it checks in the probe's answer ("state").
type Check struct {
	Name string
	Run  func(ctx context.Context) error
}

// Ready runs the readiness checks: one per configured upstream server,
// which holds once the server's session has been up (as UpstreamUp said;
// a server not up yet is not ready), then the checks of Options.Checks,
// such as the shared state's. It returns a line per check, "[+]name ok"
// or "[-]name: why", and whether all of them hold. A nil Telemetry is
// ready with nothing to say.
//
// A server lost after it was up is listed ("[!]") but leaves the replica
// ready: the supervisor is restarting it, its calls are refused with an
// error that says so, and a remote server that is down is down for every
// replica alike, so taking them all out of rotation would turn one
// server's outage into the whole deployment's.
func (t *Telemetry) Ready(ctx context.Context) (lines []string, ok bool) {
	if t == nil {
		return nil, true
	}
	ok = true
	t.upMu.Lock()
	for _, s := range t.serverNames {
		switch {
		case t.up[s]:
			lines = append(lines, fmt.Sprintf("[+]upstream %s ok", s))
		case t.wasUp[s]:
			lines = append(lines, fmt.Sprintf("[!]upstream %s: lost, being restarted (still ready)", s))
		default:
			lines = append(lines, fmt.Sprintf("[-]upstream %s: not up", s))
			ok = false
		}
	}
	t.upMu.Unlock()
	for _, c := range t.checks {
		if err := c.Run(ctx); err != nil {
			lines = append(lines, fmt.Sprintf("[-]%s: %v", c.Name, oneLine(err.Error())))
			ok = false
			continue
		}
		lines = append(lines, fmt.Sprintf("[+]%s ok", c.Name))
	}
	return lines, ok
}

// readyHandler serves ReadyPath: 200 or 503, and the lines of Ready as
// plain text.
func (t *Telemetry) readyHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), ReadyTimeout)
		defer cancel()
		lines, ok := t.Ready(ctx)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if ok {
			w.WriteHeader(http.StatusOK)
		} else {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
		if ok {
			fmt.Fprintln(w, "ready")
		} else {
			fmt.Fprintln(w, "not ready")
		}
	})
}

// liveHandler serves LivePath.
func liveHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
}

// oneLine keeps an error's text on one line of the probe's answer.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// sortedNames returns names sorted, without duplicates.
func sortedNames(names []string) []string {
	out := slices.Clone(names)
	slices.Sort(out)
	return slices.Compact(out)
}
