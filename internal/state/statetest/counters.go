package statetest

import (
	"sync"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// A PolicyOpener returns two clients of one fresh policy state, as two
// replicas would hold. It closes them when the test ends.
type PolicyOpener func(t *testing.T) (a, b state.PolicyState)

// RunPolicyState runs the conformance suite of counters and armed labels
// against the states open returns.
func RunPolicyState(t *testing.T, open PolicyOpener) {
	runCases(t, open, []testCase[state.PolicyState]{
		{"counts on two clients are one count", countShared},
		{"concurrent counts on two clients each get a count of their own", countConcurrent},
		{"a count starts again when its window ends", countWindowEnds},
		{"counters of different keys are apart", countKeysApart},
		{"a label armed on one client is read on the other", labelShared},
		{"a label armed again keeps its first arming call", labelFirstArming},
		{"labels of different scopes are apart", labelScopesApart},
		{"disarming drops a scope's labels", labelDisarm},
		{"armed labels expire", labelExpires},
		{"a window and a time to live must be positive", policyTTLRequired},
	})
}

func incr(t *testing.T, c state.Counters, key string, window time.Duration) int64 {
	t.Helper()
	n, err := c.Incr(t.Context(), key, window)
	if err != nil {
		t.Fatalf("Incr(%q): %v", key, err)
	}
	return n
}

func countShared(t *testing.T, a, b state.PolicyState) {
	for i, c := range []state.Counters{a, b, a, b} {
		if got := incr(t, c, "limit|session|s1", time.Minute); got != int64(i+1) {
			t.Fatalf("count %d = %d, want %d", i+1, got, i+1)
		}
	}
}

func countConcurrent(t *testing.T, a, b state.PolicyState) {
	const n = 40
	seen := make([]int64, 0, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		c := state.Counters(a)
		if i%2 == 1 {
			c = b
		}
		wg.Go(func() {
			got, err := c.Incr(t.Context(), "limit|global|", time.Minute)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			seen = append(seen, got)
			mu.Unlock()
		})
	}
	wg.Wait()
	have := map[int64]bool{}
	for _, v := range seen {
		if have[v] || v < 1 || v > n {
			t.Fatalf("counts %v: each of 1..%d once wanted", seen, n)
		}
		have[v] = true
	}
}

func countWindowEnds(t *testing.T, a, b state.PolicyState) {
	incr(t, a, "k", ttl)
	if got := incr(t, b, "k", ttl); got != 2 {
		t.Fatalf("second count = %d, want 2", got)
	}
	testkit.Eventually(t, 5*time.Second, "the count of k starting again", func() bool { return windowOver(t, b, "k") })
}

// windowOver reports whether k's window has ended: a count of 1 starts
// the next one.
func windowOver(t *testing.T, c state.Counters, key string) bool {
	return incr(t, c, key, ttl) == 1
}

func countKeysApart(t *testing.T, a, b state.PolicyState) {
	incr(t, a, "limit|session|s1", time.Minute)
	incr(t, a, "limit|session|s1", time.Minute)
	if got := incr(t, b, "limit|session|s2", time.Minute); got != 1 {
		t.Errorf("another key counted %d, want 1", got)
	}
}

func armed(t *testing.T, l state.Labels, scope string) []state.ArmedLabel {
	t.Helper()
	got, err := l.ArmedLabels(t.Context(), scope)
	if err != nil {
		t.Fatalf("ArmedLabels(%q): %v", scope, err)
	}
	return got
}

func arm(t *testing.T, l state.Labels, scope string, ttl time.Duration, labels ...state.ArmedLabel) {
	t.Helper()
	if err := l.ArmLabels(t.Context(), scope, labels, ttl); err != nil {
		t.Fatalf("ArmLabels(%q): %v", scope, err)
	}
}

func labelShared(t *testing.T, a, b state.PolicyState) {
	if got := armed(t, b, "s:1"); len(got) != 0 {
		t.Fatalf("a fresh scope has %v armed", got)
	}
	arm(t, a, "s:1", time.Minute, state.ArmedLabel{Label: "untrusted_input", ID: "id1", Tool: "mcp:web:fetch"}, state.ArmedLabel{Label: "egress", ID: "id1", Tool: "mcp:web:fetch"})
	got := armed(t, b, "s:1")
	want := []state.ArmedLabel{{Label: "egress", ID: "id1", Tool: "mcp:web:fetch"}, {Label: "untrusted_input", ID: "id1", Tool: "mcp:web:fetch"}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("armed = %v, want %v", got, want)
	}
}

func labelFirstArming(t *testing.T, a, b state.PolicyState) {
	arm(t, a, "s:1", time.Minute, state.ArmedLabel{Label: "untrusted_input", ID: "first", Tool: "mcp:web:fetch"})
	arm(t, b, "s:1", time.Minute, state.ArmedLabel{Label: "untrusted_input", ID: "second", Tool: "mcp:mail:read"})
	if got := armed(t, a, "s:1"); len(got) != 1 || got[0].ID != "first" {
		t.Errorf("armed = %v, want the first arming only", got)
	}
}

func labelScopesApart(t *testing.T, a, b state.PolicyState) {
	arm(t, a, "s:1", time.Minute, state.ArmedLabel{Label: "x", ID: "1"})
	if got := armed(t, b, "s:2"); len(got) != 0 {
		t.Errorf("another scope has %v armed", got)
	}
	if got := armed(t, b, "p:s:1"); len(got) != 0 {
		t.Errorf("another scope has %v armed", got)
	}
}

func labelDisarm(t *testing.T, a, b state.PolicyState) {
	arm(t, a, "s:1", time.Minute, state.ArmedLabel{Label: "x", ID: "1"})
	arm(t, a, "s:2", time.Minute, state.ArmedLabel{Label: "x", ID: "2"})
	if err := b.DisarmLabels(t.Context(), "s:1"); err != nil {
		t.Fatal(err)
	}
	if err := b.DisarmLabels(t.Context(), "s:none"); err != nil {
		t.Errorf("disarming a scope with no labels: %v", err)
	}
	if got := armed(t, a, "s:1"); len(got) != 0 {
		t.Errorf("a disarmed scope has %v armed", got)
	}
	if got := armed(t, a, "s:2"); len(got) != 1 {
		t.Errorf("another scope lost its labels: %v", got)
	}
}

func labelExpires(t *testing.T, a, b state.PolicyState) {
	arm(t, a, "s:1", ttl, state.ArmedLabel{Label: "x", ID: "1"})
	if got := armed(t, b, "s:1"); len(got) != 1 {
		t.Fatalf("armed = %v right after arming", got)
	}
	testkit.Eventually(t, 5*time.Second, "the labels expiring", func() bool { return len(armed(t, b, "s:1")) == 0 })
}

func policyTTLRequired(t *testing.T, a, _ state.PolicyState) {
	if _, err := a.Incr(t.Context(), "k", 0); err == nil {
		t.Error("Incr with no window succeeded")
	}
	if err := a.ArmLabels(t.Context(), "s", []state.ArmedLabel{{Label: "x"}}, 0); err == nil {
		t.Error("ArmLabels with no time to live succeeded")
	}
}
