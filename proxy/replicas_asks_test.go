package proxy

import (
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/approvals"
	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/proxy/streamable"
)

func TestAskWaitingOnOneReplicaIsSettledOnAnother(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, store state.Store) {
		var brokers []*approvals.Broker
		rs := newReplicas(t, 2, store, askWrite, streamable.Options{}, func(o *Options) {
			b := approvals.NewBroker(&approvals.BrokerOptions{Shared: store})
			t.Cleanup(b.Close)
			brokers = append(brokers, b)
			o.Resolvers = []approvals.Resolver{b}
			o.AskTimeout = 10 * time.Second
		})
		lb := newBalancer(rs)
		c := lb.client(t) // declares no elicitation: the approvals page is asked
		done := make(chan string, 1)
		go func() {
			res, err := c.CallTool(t.Context(), callWrite("/tmp/x"))
			if err != nil {
				done <- err.Error()
				return
			}
			done <- testkit.Text(res)
		}()
		var id string
		testkit.Eventually(t, 5*time.Second, "the ask listed on replica 1", func() bool {
			s, _, err := brokers[1].SnapshotContext(t.Context())
			if err != nil || len(s.Pending) != 1 {
				return false
			}
			id = s.Pending[0].ID
			return true
		})
		if err := brokers[1].DecideContext(t.Context(), id, state.AllowSession, approvals.ViaPage, "root"); err != nil {
			t.Fatal(err)
		}
		if got := <-done; got != "written" {
			t.Fatalf("the call waiting on replica 0: %q, want it forwarded", got)
		}
		// The session grant given on replica 1's page holds on replica 1.
		lb.to(1)
		res := testkit.CallTool(t, c, "up__write", map[string]any{"path": "/tmp/x"})
		if testkit.Text(res) != "written" || len(rs.rec.Arguments()) != 2 {
			t.Errorf("the next call on replica 1: %q, upstream calls %d; want it covered by the grant", testkit.Text(res), len(rs.rec.Arguments()))
		}
		if s, _, _ := brokers[0].SnapshotContext(t.Context()); len(s.Pending) != 0 {
			t.Errorf("an ask is still pending: %+v", s.Pending)
		}
	})
}

// callWrite is a tools/call of up__write with path.
func callWrite(path string) mcp.CallToolRequest {
	return mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "up__write", Arguments: map[string]any{"path": path}}}
}
