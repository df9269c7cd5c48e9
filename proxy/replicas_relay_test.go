package proxy

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/proxy/streamable"
)

func TestElicitationAnswerPostedToAnotherReplicaReachesTheOneWaiting(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, store state.Store) {
		rs := newReplicas(t, 2, store, askWrite, streamable.Options{}, func(o *Options) { o.AskTimeout = 5 * time.Second })
		b := newBalancer(rs)
		b.roundRobin = true // initialize → 0, initialized → 1, the call → 0, the form's answer → 1, …
		var asked atomic.Int32
		c := b.client(t, client.WithElicitationHandler(answering("allow_once", &asked)))
		for i := range 3 {
			before := [2]int32{b.sent[0].Load(), b.sent[1].Load()}
			res := testkit.CallTool(t, c, "up__write", map[string]any{"path": "/tmp/x"})
			if res.IsError {
				t.Fatalf("call %d: %q", i, testkit.Text(res))
			}
			if b.sent[0].Load() == before[0] || b.sent[1].Load() == before[1] {
				t.Errorf("call %d and the answer to its form did not reach both replicas", i)
			}
		}
		if asked.Load() != 3 || len(rs.rec.Arguments()) != 3 {
			t.Errorf("asked %d times, upstream got %d calls; want 3 and 3", asked.Load(), len(rs.rec.Arguments()))
		}
	})
}
