package proxy

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

func TestElicitationAnswerPostedToAnotherReplicaReachesTheOneWaiting(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, store state.Store) {
		rs := newReplicas(t, 2, store, askWrite, HTTPOptions{}, func(o *Options) { o.AskTimeout = 5 * time.Second })
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

func TestRequestIDClaimedByOneReplicaIsWithheldByAnother(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, store state.Store) {
		replica := func() *httpSessions {
			return &httpSessions{shared: store, relays: map[string]struct{}{}, logger: slog.New(slog.DiscardHandler)}
		}
		a, b := replica(), replica()
		chunk := []byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"elicitation/create\",\"params\":{}}\n\n")
		ctx, cancel := context.WithCancel(t.Context())
		ra := &relayed{hs: a, session: "s1", header: http.Header{}, ctx: ctx}
		rb := &relayed{hs: b, session: "s1", header: http.Header{}, ctx: ctx}
		if !ra.claimAll(chunk) {
			t.Fatal("the first replica could not claim request 7")
		}
		if rb.claimAll(chunk) {
			t.Error("a second replica claimed request 7 of the same session: the client's answer could reach the wrong request")
		}
		// Another session's request 7 is another request.
		rc := &relayed{hs: b, session: "s2", header: http.Header{}, ctx: ctx}
		if !rc.claimAll(chunk) {
			t.Error("request 7 of another session could not be claimed")
		}
		// A notification carries nothing to claim.
		if !rb.claimAll([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n")) {
			t.Error("a notification was withheld")
		}
		cancel()
		ra.done()
		rb.done()
		rc.done()
		// Withdrawn with the request that made it: the ID is free again.
		ctx, cancel = context.WithCancel(t.Context())
		rd := &relayed{hs: b, session: "s1", header: http.Header{}, ctx: ctx}
		if !rd.claimAll(chunk) {
			t.Error("request 7 stayed claimed after the request that claimed it ended")
		}
		cancel()
		rd.done()
	})
}
