package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// generations runs fn on the legacy protocol (sessions; the proxy sends
// elicitation/create and waits for the answer, which the balancer may
// bring to another replica) and on 2026-07-28 (no sessions; an ask is a
// multi round-trip whose retry may land on another replica), one after
// the other on one replica set: mark tells their calls apart in the
// audit logs.
func generations(t *testing.T, fn func(t *testing.T, mark string, opts ...client.ClientOption)) {
	t.Run("legacy", func(t *testing.T) { fn(t, "legacy", client.WithLegacyProtocolOnly()) })
	t.Run("modern", func(t *testing.T) { fn(t, "modern") })
}

// connectLB connects a client to the replica set through the balancer
// with the bearer token. Each client has connections of its own, as
// separate MCP clients do: none picks up a connection that another's
// failed call left closing.
func connectLB(t *testing.T, rs *replicaSet, token string, opts ...client.ClientOption) *client.Client {
	t.Helper()
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(hc.CloseIdleConnections)
	tr, err := transport.NewStreamableHTTP(rs.url(), transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}), transport.WithHTTPBasicClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, opts...)
	t.Cleanup(func() { c.Close() })
	initialize(t, c)
	return c
}

// wantSpread fails unless events were decided by at least two replicas:
// one client's consecutive requests must land on different replicas for
// the test to show anything.
func wantSpread(t *testing.T, events []auditLine) {
	t.Helper()
	if got := replicasOf(events); len(got) < 2 {
		t.Errorf("the requests were decided by replicas %v, want at least two (round robin):\n%s", got, describe(events))
	}
}

func TestReplicasServeASessionRoundRobin(t *testing.T) {
	t.Parallel()
	f := replicasFixture(t, "10s")
	rs := startReplicas(t, f, 3)
	generations(t, func(t *testing.T, mark string, opts ...client.ClientOption) {
		c := connectLB(t, rs, plainToken, opts...)
		path := filepath.Join(f.sandbox, mark+".txt")
		if err := os.WriteFile(path, []byte("hello "+mark), 0o600); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			names := toolNames(t, c)
			if !slices.Contains(names, "go__read") || !slices.Contains(names, "mem__recall") || slices.Contains(names, "go__move") {
				t.Errorf("tools/list #%d = %v, want go__read and mem__recall, not the denied go__move", i+1, names)
			}
		}
		for i := range 6 {
			if res := callTool(t, c, "go__read", map[string]any{"path": path}); res.IsError || testkit.Text(res) != "hello "+mark {
				t.Errorf("read #%d through the balancer = %q, want the file", i+1, testkit.Text(res))
			}
		}
		// move is denied outright, so hidden: calling it is an error.
		res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "go__move", Arguments: map[string]any{"source": path, "destination": path + ".moved"}}})
		if err == nil && !res.IsError {
			t.Errorf("a denied move went through: %q", testkit.Text(res))
		}
		if !exists(path) {
			t.Error("the denied move moved the file")
		}
		reads := matching(rs.decisions(t), mark)
		if len(reads) != 6 {
			t.Fatalf("%d decisions on %s, want 6:\n%s", len(reads), path, describe(reads))
		}
		for _, e := range reads {
			if e.Decision != "allow" || e.Principal == "" {
				t.Errorf("decision %+v, want allow with a principal", e)
			}
		}
		wantSpread(t, reads)
	})

	// Each replica's log is a chain of its own, naming it, and audit
	// verify checks the three at once.
	var logs []string
	for _, r := range rs.replicas {
		logs = append(logs, r.auditPath)
	}
	out := runCLI(t, append([]string{"audit", "verify"}, logs...)...)
	for _, r := range rs.replicas {
		if want := r.auditPath + ": ok: "; !strings.Contains(out, want) || !strings.Contains(out, "replica "+r.id+",") {
			t.Errorf("audit verify of the three logs printed\n%s\nwant %s verified as replica %s", out, r.auditPath, r.id)
		}
	}
}

func TestReplicasAskByElicitationAndKeepSessionGrants(t *testing.T) {
	t.Parallel()
	f := replicasFixture(t, "10s")
	rs := startReplicas(t, f, 3)
	generations(t, func(t *testing.T, mark string, opts ...client.ClientOption) {
		h := &human{answer: func(n int, ctx context.Context) (*mcp.ElicitationResult, error) {
			if n == 1 {
				return says("allow_once")(n, ctx)
			}
			return says("allow_session")(n, ctx)
		}}
		c := connectLB(t, rs, plainToken, append(opts, client.WithElicitationHandler(h))...)
		once := filepath.Join(f.sandbox, mark+"-once.txt")
		if res := goWrite(t, c, once, "1"); res.IsError || !exists(once) {
			t.Fatalf("allowed once through the balancer: %q, written %v", testkit.Text(res), exists(once))
		}
		kept := filepath.Join(f.sandbox, mark+"-kept.txt")
		for i := range 6 {
			if res := goWrite(t, c, kept, fmt.Sprint(i)); res.IsError {
				t.Errorf("write #%d of %s: %q, want it allowed (asked once, then by the session grant)", i+1, kept, testkit.Text(res))
			}
		}
		if data, _ := os.ReadFile(kept); string(data) != "5" {
			t.Errorf("%s holds %q, want the last write", kept, data)
		}
		// 2026-07-28 has no sessions over HTTP: a grant "for this
		// session" covers the call it was given for, and the next asks
		// again (proxy/grants.go), on whichever replica.
		wantAsks, later := 2, "user_session"
		if mark == "modern" {
			wantAsks = 7
		}
		if h.times() != wantAsks {
			t.Errorf("the human was asked %d times, want %d", h.times(), wantAsks)
		}
		events := matching(rs.decisions(t), mark)
		var got []string
		for _, e := range events {
			got = append(got, e.GrantedBy)
		}
		want := []string{"user_once", later, later, later, later, later, later}
		if !slices.Equal(got, want) {
			t.Errorf("granted_by = %v, want %v:\n%s", got, want, describe(events))
		}
		wantSpread(t, events[1:])
	})
}

// asksPending is a replica's mcpwarden_asks_pending: the asks it waits on.
func (r *replica) asksPending(t *testing.T) float64 {
	t.Helper()
	return r.scrape(t)["mcpwarden_asks_pending"]
}

// approve runs mcpwarden approve id (with more flags: --session) against
// replica r's approvals page.
func (r *replica) approve(t *testing.T, id string, flags ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), binary, append([]string{"approve", id, "--token-file", r.tokenFile}, flags...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mcpwarden approve %s on %s: %v\n%s", id, r.id, err, out)
	}
	return string(out)
}

func TestReplicasApprovalOnAnotherReplicasPage(t *testing.T) {
	t.Parallel()
	f := replicasFixture(t, "20s")
	rs := startReplicas(t, f, 3)
	generations(t, func(t *testing.T, mark string, opts ...client.ClientOption) {
		c := connectLB(t, rs, plainToken, opts...) // no elicitation: the approvals page answers
		target := filepath.Join(f.sandbox, mark+"-approved.txt")
		pending := goWriteAsync(t, c, target, "x")
		var waiter *replica
		testkit.Eventually(t, 10*time.Second, "a replica to wait on the ask", func() bool {
			for _, r := range rs.replicas {
				if r.asksPending(t) == 1 {
					waiter = r
					return true
				}
			}
			return false
		})
		// Every replica's page lists the ask, not only the waiter's.
		var ids []string
		for _, r := range rs.replicas {
			ids = append(ids, pendingAskID(t, readTokenFile(t, r.tokenFile)))
		}
		if ids[0] != ids[1] || ids[1] != ids[2] {
			t.Errorf("the pages list asks %v, want the one ask on every page", ids)
		}
		other := rs.replicas[(slices.Index(rs.replicas, waiter)+1)%len(rs.replicas)]
		other.approve(t, ids[0])
		if res := result(t, pending); res.IsError || !exists(target) {
			t.Fatalf("approved on %s, waiting on %s: %q, written %v", other.id, waiter.id, testkit.Text(res), exists(target))
		}
		events := matching(rs.decisions(t), mark)
		if len(events) != 1 || events[0].GrantedBy != "approval_cli" || events[0].Replica != waiter.id {
			t.Errorf("decisions = \n%s want one, approval_cli, by the waiting %s", describe(events), waiter.id)
		}
	})
}

func TestReplicasKeepProfilesOnEveryReplica(t *testing.T) {
	t.Parallel()
	f := replicasFixture(t, "10s")
	rs := startReplicas(t, f, 3)
	generations(t, func(t *testing.T, mark string, opts ...client.ClientOption) {
		c := connectLB(t, rs, readonlyToken, opts...)
		for i := range 4 {
			names := toolNames(t, c)
			if !slices.Contains(names, "go__read") || slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "mem__") }) || slices.Contains(names, "go__write") {
				t.Errorf("the readonly profile's tools/list #%d = %v, want go__read without mem__* and the denied go__write", i+1, names)
			}
		}
		target := filepath.Join(f.sandbox, mark+"-readonly.txt")
		for i := range 4 {
			// write is denied outright for the profile, so hidden from it:
			// calling it is an error, on every replica.
			res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "go__write", Arguments: map[string]any{"path": target, "content": "x"}}})
			if err == nil && !res.IsError {
				t.Errorf("write #%d by the readonly profile went through: %q", i+1, testkit.Text(res))
			}
		}
		if exists(target) {
			t.Error("the readonly profile wrote a file")
		}
		events := matching(rs.decisions(t), mark)
		if len(events) != 4 {
			t.Fatalf("%d decisions, want 4:\n%s", len(events), describe(events))
		}
		for _, e := range events {
			if e.Decision != "deny" || e.Profile != "readonly" {
				t.Errorf("decision %+v, want deny for profile readonly", e)
			}
		}
		wantSpread(t, events)
	})
}

// goWrite calls go__write.
func goWrite(t *testing.T, c *client.Client, path, content string) *mcp.CallToolResult {
	t.Helper()
	return callTool(t, c, "go__write", map[string]any{"path": path, "content": content})
}

// goWriteAsync calls go__write and returns its result when it comes (a
// failed call as an error result).
func goWriteAsync(t *testing.T, c *client.Client, path, content string) <-chan *mcp.CallToolResult {
	t.Helper()
	ch := make(chan *mcp.CallToolResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "go__write", Arguments: map[string]any{"path": path, "content": content}}})
		if err != nil {
			res = mcp.NewToolResultError("call failed: " + err.Error())
		}
		ch <- res
	}()
	return ch
}
