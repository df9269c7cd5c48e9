package proxy

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/rules"
)

// limitSpec allows everything and limits fs echo calls: max in each
// minute, counted by scope, then deny.
func limitSpec(max int, scope, then string) rules.Spec {
	return rules.Spec{
		Global: rules.PolicySpec{Allow: []string{"mcp:*:*"}},
		Limits: []rules.LimitSpec{{Match: "mcp:fs:echo", Max: max, Per: scope, Window: time.Minute, Then: then}},
	}
}

// echoOutcomes calls fs echo n times on c and counts the calls forwarded
// and refused; a refusal must name the limit.
func echoOutcomes(t *testing.T, c *client.Client, n int, forwarded, refused *atomic.Int32) {
	t.Helper()
	for range n {
		res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "fs__echo", Arguments: map[string]any{"text": "hi"}}})
		switch {
		case err != nil:
			t.Error(err)
		case !res.IsError:
			forwarded.Add(1)
		case strings.Contains(testkit.Text(res), "limits[0]: mcp:fs:echo max"):
			refused.Add(1)
		default:
			t.Errorf("a refusal that does not name the limit: %s", testkit.Text(res))
		}
	}
}

func TestCallFloodBeyondAGlobalLimitIsDeniedAcrossConcurrentSessions(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, limitSpec(5, "global", "deny"), Options{})
	const sessions, calls = 4, 4
	clients := make([]*client.Client, sessions)
	for i := range clients {
		clients[i] = e.httpClient(t)
	}
	var forwarded, refused atomic.Int32
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() { echoOutcomes(t, c, calls, &forwarded, &refused) })
	}
	wg.Wait()
	if forwarded.Load() != 5 || refused.Load() != sessions*calls-5 {
		t.Errorf("%d forwarded and %d refused, want 5 forwarded and the rest refused", forwarded.Load(), refused.Load())
	}
}

func TestSessionLimitCountsEachConcurrentSessionOnItsOwn(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, limitSpec(3, "session", "deny"), Options{})
	const sessions = 3
	var wg sync.WaitGroup
	for range sessions {
		c := e.httpClient(t)
		wg.Go(func() {
			var forwarded, refused atomic.Int32
			echoOutcomes(t, c, 5, &forwarded, &refused)
			if forwarded.Load() != 3 || refused.Load() != 2 {
				t.Errorf("a session had %d forwarded and %d refused, want 3 and 2", forwarded.Load(), refused.Load())
			}
		})
	}
	wg.Wait()
}

func TestPrincipalLimitCountsEverySessionOfThePrincipalTogether(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, limitSpec(4, "principal", "deny"), Options{})
	var forwarded, refused atomic.Int32
	for range 3 {
		echoOutcomes(t, e.httpClient(t), 2, &forwarded, &refused)
	}
	if forwarded.Load() != 4 || refused.Load() != 2 {
		t.Errorf("%d forwarded and %d refused, want 4 and 2", forwarded.Load(), refused.Load())
	}
}

func TestCallBeyondALimitIsAskedAndTheDecisionNamesTheLimit(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, limitSpec(1, "session", "ask"), Options{})
	c := e.httpClient(t)
	for range 2 {
		if _, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "fs__echo", Arguments: map[string]any{"text": "hi"}}}); err != nil {
			t.Fatal(err)
		}
	}
	var decisions []string
	for _, ev := range e.sink.events(t) {
		if ev.Event == audit.KindDecision && ev.Tool == "mcp:fs:echo" {
			decisions = append(decisions, ev.Decision+" "+ev.Rule)
		}
	}
	want := []string{"allow mcp:*:*", "ask limits[0]: mcp:fs:echo max 1 per session in 1m0s then ask"}
	if strings.Join(decisions, "|") != strings.Join(want, "|") {
		t.Errorf("decisions %q, want %q", decisions, want)
	}
}

func TestLimitNeverLowersADeny(t *testing.T) {
	t.Parallel()
	spec := limitSpec(1, "session", "ask")
	spec.Global.Deny = []string{"mcp:fs:echo:text=secret"}
	e := newCatalogEnv(t, spec, Options{})
	c := e.httpClient(t)
	for _, text := range []string{"hi", "secret", "secret"} {
		res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "fs__echo", Arguments: map[string]any{"text": text}}})
		if err != nil {
			t.Fatal(err)
		}
		if text == "secret" && !strings.Contains(testkit.Text(res), "denied") {
			t.Errorf("a denied call over the limit got %q, want it denied", testkit.Text(res))
		}
	}
}

func TestLimitWindowStartsAfreshOnceItEnds(t *testing.T) {
	t.Parallel()
	const window = 2 * time.Second
	l := &rules.Limit{Text: "l", Max: 2, Window: window, Per: rules.ScopeSession}
	lc := newSessionState(nil).counters() // the embedded store, as without state:
	count := func(session, principal string) int {
		t.Helper()
		n, err := lc.tally(t.Context(), l, session, principal)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	counts := []int{count("s1", "p"), count("s1", "p"), count("s2", "p"), count("s1", "p")}
	time.Sleep(window + 100*time.Millisecond) // the window ends
	counts = append(counts, count("s1", "p"), count("", "p"), count("", "q"))
	want := []int{1, 2, 1, 3, 1, 1, 1}
	for i := range want {
		if counts[i] != want[i] {
			t.Errorf("counts %v, want %v", counts, want)
			break
		}
	}
}
