package telemetry

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/rules"
)

func newTestTelemetry(t *testing.T, o Options) *Telemetry {
	t.Helper()
	if o.Servers == nil {
		o.Servers = []string{"fs", "github"}
	}
	if o.Profiles == nil {
		o.Profiles = []string{"ci"}
	}
	tel, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(t.Context()) })
	return tel
}

// scrape fetches the metrics through Handler and returns every sample by
// its series ("name{label="v",...}", labels as the exposition orders them).
func scrape(t *testing.T, h http.Handler) map[string]float64 {
	t.Helper()
	return testkit.Scrape(t, h, MetricsPath)
}

func decisionSeries(server, tool string, d rules.Decision, profile string) string {
	return fmt.Sprintf(`mcpwarden_decisions_total{decision=%q,profile=%q,server=%q,tool=%q}`, d, profile, server, tool)
}

func TestCountersMoveByTheCallsMade(t *testing.T) {
	t.Parallel()
	tel := newTestTelemetry(t, Options{ServiceVersion: "1.2.3"})
	tel.SetKnownTools("fs", []string{"read_file", "write_file"})
	before := scrape(t, tel.Handler())

	const workers, each = 4, 25
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				tel.Decision("", "fs", "read_file", rules.Allow)
				tel.Decision("ci", "fs", "write_file", rules.Deny)
				tel.Call("fs", 3*time.Millisecond, OutcomeOK)
				tel.AuditWriteFailed()
			}
		})
	}
	wg.Wait()
	tel.Decision("ci", "fs", "write_file", rules.Ask)
	tel.Call("fs", 2*time.Second, OutcomeToolError)
	tel.Call("github", time.Minute, OutcomeFailed)
	tel.UpstreamUp("fs", true)
	tel.UpstreamRestarted("github")
	tel.UpstreamRestarted("github")
	tel.SessionOpened()
	tel.SessionOpened()
	tel.SessionClosed()
	tel.SessionEvicted(CapPrincipal)
	tel.SessionEvicted(CapPrincipal)
	tel.SessionEvicted(CapGlobal)
	tel.AskStarted()
	tel.AskStarted()
	tel.AskEnded()
	after := scrape(t, tel.Handler())

	const n = workers * each
	tests := []struct {
		series string
		want   float64
	}{
		{decisionSeries("fs", "read_file", rules.Allow, ""), n},
		{decisionSeries("fs", "write_file", rules.Deny, "ci"), n},
		{decisionSeries("fs", "write_file", rules.Ask, "ci"), 1},
		{`mcpwarden_audit_write_failures_total`, n},
		{`mcpwarden_upstream_call_duration_seconds_count{outcome="ok",server="fs"}`, n},
		{`mcpwarden_upstream_call_duration_seconds_bucket{outcome="ok",server="fs",le="0.005"}`, n},
		{`mcpwarden_upstream_call_duration_seconds_bucket{outcome="ok",server="fs",le="+Inf"}`, n},
		{`mcpwarden_upstream_call_duration_seconds_count{outcome="tool_error",server="fs"}`, 1},
		{`mcpwarden_upstream_call_duration_seconds_bucket{outcome="tool_error",server="fs",le="1"}`, 0},
		{`mcpwarden_upstream_call_duration_seconds_bucket{outcome="tool_error",server="fs",le="2.5"}`, 1},
		{`mcpwarden_upstream_call_duration_seconds_bucket{outcome="failed",server="github",le="30"}`, 0},
		{`mcpwarden_upstream_call_duration_seconds_bucket{outcome="failed",server="github",le="60"}`, 1},
		{`mcpwarden_upstream_up{server="fs"}`, 1},
		{`mcpwarden_upstream_up{server="github"}`, 0},
		{`mcpwarden_upstream_restarts_total{server="fs"}`, 0},
		{`mcpwarden_upstream_restarts_total{server="github"}`, 2},
		{`mcpwarden_sessions_active`, 1},
		{`mcpwarden_sessions_evicted_total{cap="principal"}`, 2},
		{`mcpwarden_sessions_evicted_total{cap="global"}`, 1},
		{`mcpwarden_asks_pending`, 1},
	}
	for _, tt := range tests {
		got, ok := after[tt.series]
		if !ok {
			t.Errorf("no series %s", tt.series)
			continue
		}
		if got -= before[tt.series]; got != tt.want {
			t.Errorf("%s moved by %v, want %v", tt.series, got, tt.want)
		}
	}
	if got := after[`mcpwarden_build_info{version="1.2.3"}`]; got != 1 {
		t.Errorf("mcpwarden_build_info{version=\"1.2.3\"} = %v, want 1", got)
	}
	if got, want := after[`mcpwarden_upstream_call_duration_seconds_sum{outcome="failed",server="github"}`], 60.0; got != want {
		t.Errorf("failed call duration sum = %v, want %v", got, want)
	}
}

func TestHistogramHasEveryBucket(t *testing.T) {
	t.Parallel()
	tel := newTestTelemetry(t, Options{})
	tel.Call("fs", time.Millisecond, OutcomeOK)
	got := scrape(t, tel.Handler())
	for _, le := range append(formatBuckets(CallBuckets), "+Inf") {
		series := fmt.Sprintf(`mcpwarden_upstream_call_duration_seconds_bucket{outcome="ok",server="fs",le=%q}`, le)
		if v, ok := got[series]; !ok || v != 1 {
			t.Errorf("%s = %v (present %v), want 1", series, v, ok)
		}
	}
}

func formatBuckets(bs []float64) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = strconv.FormatFloat(b, 'g', -1, 64)
	}
	return out
}

func TestLabelsOutsideTheKnownSetsAreOther(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", MaxToolNameLen+1)
	tests := []struct {
		name                   string
		profile, server, tool  string
		decision               rules.Decision
		wantServer, wantTool   string
		wantProfile, wantDecis string
	}{
		{"a known tool keeps its name", "", "fs", "read_file", rules.Allow, "fs", "read_file", "", "allow"},
		{"a tool the upstream never listed is other", "", "fs", "exfiltrate", rules.Deny, "fs", Other, "", "deny"},
		{"a tool known on another server is other", "", "github", "read_file", rules.Ask, "github", Other, "", "ask"},
		{"an unconfigured server is other", "", "evil", "read_file", rules.Deny, Other, Other, "", "deny"},
		{"an unconfigured profile is other", "nope", "fs", "read_file", rules.Deny, "fs", "read_file", Other, "deny"},
		{"a configured profile keeps its name", "ci", "fs", "read_file", rules.Allow, "fs", "read_file", "ci", "allow"},
		{"a name too long to be a label is other", "", "fs", long, rules.Allow, "fs", Other, "", "allow"},
		{"an unknown decision value is other", "", "fs", "read_file", rules.Decision(9), "fs", "read_file", "", Other},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tel := newTestTelemetry(t, Options{})
			tel.SetKnownTools("fs", []string{"read_file", long})
			tel.SetKnownTools("evil", []string{"read_file"}) // not configured: ignored
			tel.Decision(tt.profile, tt.server, tt.tool, tt.decision)
			series := fmt.Sprintf(`mcpwarden_decisions_total{decision=%q,profile=%q,server=%q,tool=%q}`, tt.wantDecis, tt.wantProfile, tt.wantServer, tt.wantTool)
			got := scrape(t, tel.Handler())
			if got[series] != 1 {
				t.Errorf("%s = %v, want 1; decision series: %v", series, got[series], decisionSamples(got))
			}
		})
	}
}

func decisionSamples(samples map[string]float64) []string {
	var out []string
	for k := range samples {
		if strings.HasPrefix(k, "mcpwarden_decisions_total") {
			out = append(out, k)
		}
	}
	return out
}

// An upstream that lists (or a client that calls) thousands of tool names
// must not create thousands of series.
func TestManyToolNamesDoNotGrowSeries(t *testing.T) {
	t.Parallel()
	tel := newTestTelemetry(t, Options{})
	listed := make([]string, 3*MaxKnownTools)
	for i := range listed {
		listed[i] = fmt.Sprintf("tool_%d", i)
	}
	tel.SetKnownTools("fs", listed)
	for i := range 4 * MaxKnownTools {
		tel.Decision("", "fs", fmt.Sprintf("tool_%d", i), rules.Allow)
	}
	got := scrape(t, tel.Handler())
	if n := len(decisionSamples(got)); n != MaxKnownTools+1 {
		t.Errorf("%d decision series, want %d (the known tools and other)", n, MaxKnownTools+1)
	}
	if v := got[decisionSeries("fs", Other, rules.Allow, "")]; v != 3*MaxKnownTools {
		t.Errorf("other = %v, want %d", v, 3*MaxKnownTools)
	}
	// A re-listing replaces the known set.
	tel.SetKnownTools("fs", []string{"new_tool"})
	tel.Decision("", "fs", "tool_0", rules.Allow)
	tel.Decision("", "fs", "new_tool", rules.Allow)
	got = scrape(t, tel.Handler())
	if v := got[decisionSeries("fs", Other, rules.Allow, "")]; v != 3*MaxKnownTools+1 {
		t.Errorf("other after re-listing = %v, want %d", v, 3*MaxKnownTools+1)
	}
	if v := got[decisionSeries("fs", "new_tool", rules.Allow, "")]; v != 1 {
		t.Errorf("new_tool = %v, want 1", v)
	}
}

func TestResultOutcome(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		isError bool
		err     error
		want    Outcome
	}{
		{"a result is ok", false, nil, OutcomeOK},
		{"an isError result is a tool error", true, nil, OutcomeToolError},
		{"an error is a failure", false, io.EOF, OutcomeFailed},
	}
	for _, tt := range tests {
		if got := ResultOutcome(tt.isError, tt.err); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
	if got := Outcome(7).String(); got != Other {
		t.Errorf("Outcome(7) = %q, want %q", got, Other)
	}
}

func TestShadowDecisionsAreCountedByServerAndWouldBeDecision(t *testing.T) {
	t.Parallel()
	tel := newTestTelemetry(t, Options{})
	tel.ShadowDecision("fs", rules.Deny)
	tel.ShadowDecision("fs", rules.Deny)
	tel.ShadowDecision("fs", rules.Ask)
	tel.ShadowDecision("evil", rules.Ask) // not configured: counted as other
	got := scrape(t, tel.Handler())
	tests := []struct {
		series string
		want   float64
	}{
		{`mcpwarden_shadow_decisions_total{decision="deny",server="fs"}`, 2},
		{`mcpwarden_shadow_decisions_total{decision="ask",server="fs"}`, 1},
		{`mcpwarden_shadow_decisions_total{decision="ask",server="other"}`, 1},
	}
	for _, tt := range tests {
		if got[tt.series] != tt.want {
			t.Errorf("%s = %v, want %v", tt.series, got[tt.series], tt.want)
		}
	}
	var nilTel *Telemetry
	nilTel.ShadowDecision("fs", rules.Deny) // no metrics: nothing, no panic
}
