package proxy

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/proxy/ask"
	"github.com/mcpwarden/mcpwarden/proxy/streamable"
)

func TestRetryOfAModernAskIsServedByAnotherReplica(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, store state.Store) {
		rs := newReplicas(t, 2, store, askWrite, streamable.Options{}, nil)
		b := newBalancer(rs)
		b.roundRobin = true
		var asked atomic.Int32
		c := b.clientOn(t, "", client.WithElicitationHandler(answering("allow_once", &asked)))
		for i := range 2 {
			before := [2]int32{b.sent[0].Load(), b.sent[1].Load()}
			res := testkit.CallTool(t, c, "up__write", map[string]any{"path": "/tmp/x"})
			if res.IsError {
				t.Fatalf("call %d: %q", i, testkit.Text(res))
			}
			if b.sent[0].Load() == before[0] || b.sent[1].Load() == before[1] {
				t.Errorf("call %d and its retry did not reach both replicas", i)
			}
		}
		if asked.Load() != 2 || len(rs.rec.Arguments()) != 2 {
			t.Errorf("asked %d times, upstream got %d calls; want 2 and 2", asked.Load(), len(rs.rec.Arguments()))
		}
	})
}

func TestRequestStateIsSingleUseAcrossReplicas(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, store state.Store) {
		rs := newReplicas(t, 3, store, askWrite, streamable.Options{}, nil)
		p := &ask.Pending{Session: "s", Key: ask.GrantKey{Principal: "alice", Tool: "mcp:up:write", Rule: "r"}, Digest: "d",
			Target: ask.Target{Earns: true, Paths: []string{"/tmp/x"}, Forms: []string{"/tmp/x"}, Folders: []string{"/tmp"}}, Offered: []string{"allow_once", "deny"}, Expires: time.Now().Add(time.Minute)}
		token, err := rs.srvs[0].asker.Keep.Issue(t.Context(), p)
		if err != nil {
			t.Fatal(err)
		}
		// Two replicas take the same state at once: one gets the ask.
		var wg sync.WaitGroup
		got := make([]*ask.Pending, 2)
		for i := range got {
			wg.Go(func() {
				q, err := rs.srvs[i+1].asker.Keep.Take(t.Context(), token)
				if err != nil {
					t.Error(err)
				}
				got[i] = q
			})
		}
		wg.Wait()
		if (got[0] == nil) == (got[1] == nil) {
			t.Fatalf("replicas 1 and 2 took the state: %v and %v; want exactly one", got[0] != nil, got[1] != nil)
		}
		q := got[0]
		if q == nil {
			q = got[1]
		}
		if q.Session != p.Session || q.Key != p.Key || q.Digest != p.Digest || strings.Join(q.Target.Forms, ",") != "/tmp/x" || !q.Target.Earns || len(q.Offered) != 2 {
			t.Errorf("the state came back as %+v, want %+v", q, p)
		}
		if again, err := rs.srvs[0].asker.Keep.Take(t.Context(), token); again != nil || err != nil {
			t.Errorf("the state was taken again on the replica that issued it: %v, %v", again, err)
		}
	})
}

// TestFloodOfUnansweredRoundTripAsksIsBounded: a client that never
// retries leaves a request state per ask; without shared state they are
// kept in the embedded store, which stops at maxPendingAsks, and the ask
// after them passes on to the next resolver instead of growing memory.
func TestFloodOfUnansweredRoundTripAsksIsBounded(t *testing.T) {
	t.Parallel()
	srv := newEnv(t, askWrite, audit.Config{}, &memorySink{}).srv
	p := &ask.Pending{Session: "s", Key: ask.GrantKey{Principal: "alice", Tool: "mcp:up:write"}, Digest: "d", Offered: []string{"deny"}, Expires: time.Now().Add(time.Minute)}
	for i := range maxPendingAsks {
		if _, err := srv.asker.Keep.Issue(t.Context(), p); err != nil {
			t.Fatalf("state %d: %v", i, err)
		}
	}
	if _, err := srv.asker.Keep.Issue(t.Context(), p); !errors.Is(err, ask.ErrTooManyPending) {
		t.Errorf("state %d past the bound: %v, want ErrTooManyPending", maxPendingAsks+1, err)
	}
}
