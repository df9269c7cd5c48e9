package proxy

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/state/memory"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/proxy/streamable"
	"github.com/mcpwarden/mcpwarden/rules"
)

var askWrite = rules.PolicySpec{Allow: []string{"mcp:up:echo"}, Ask: []string{"mcp:up:write"}}

// answering is an elicitation handler that answers every form with
// decision and counts the forms.
func answering(decision string, asked *atomic.Int32) elicitFunc {
	return func(mcp.ElicitationRequest) *mcp.ElicitationResult {
		asked.Add(1)
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"decision": decision}}}
	}
}

func TestGrantGivenOnOneReplicaHoldsOnAnother(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		decision    string
		wantForward bool
	}{
		{"an allow for the session", "allow_session", true},
		{"a deny for the session", "deny_session", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			forEachStore(t, func(t *testing.T, store state.Store) {
				rs := newReplicas(t, 2, store, askWrite, streamable.Options{}, nil)
				b := newBalancer(rs)
				var asked atomic.Int32
				c := b.client(t, client.WithElicitationHandler(answering(tt.decision, &asked)))
				testkit.CallTool(t, c, "up__write", map[string]any{"path": "/tmp/x"})
				b.to(1)
				res := testkit.CallTool(t, c, "up__write", map[string]any{"path": "/tmp/x"})
				if asked.Load() != 1 {
					t.Errorf("the human was asked %d times, want once: the grant given on replica 0 holds on replica 1", asked.Load())
				}
				if got := len(rs.rec.Arguments()); (got == 2) != tt.wantForward {
					t.Errorf("the upstream got %d calls (result %q), want the second forwarded = %v", got, testkit.Text(res), tt.wantForward)
				}
				if tt.decision != "allow_session" {
					return
				}
				// The grant covers only what it was given for.
				testkit.CallTool(t, c, "up__write", map[string]any{"path": "/etc/passwd"})
				if asked.Load() != 2 {
					t.Errorf("a call outside the grant's scope on replica 1 was not asked (%d forms)", asked.Load())
				}
			})
		})
	}
}

func TestGrantOfOneSessionDoesNotCoverAnotherOnAnotherReplica(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, store state.Store) {
		rs := newReplicas(t, 2, store, askWrite, streamable.Options{}, nil)
		b := newBalancer(rs)
		var asked atomic.Int32
		first := b.client(t, client.WithElicitationHandler(answering("allow_session", &asked)))
		testkit.CallTool(t, first, "up__write", map[string]any{"path": "/tmp/x"})
		b.to(1)
		var other atomic.Int32
		second := b.client(t, client.WithElicitationHandler(answering("deny", &other)))
		testkit.CallTool(t, second, "up__write", map[string]any{"path": "/tmp/x"})
		if other.Load() != 1 || len(rs.rec.Arguments()) != 1 {
			t.Errorf("another session on replica 1 was asked %d times and the upstream got %d calls; want it asked, and denied", other.Load(), len(rs.rec.Arguments()))
		}
	})
}

// A grantsDown is a shared state whose grants cannot be reached, as when
// Redis goes away between two commands.
type grantsDown struct {
	state.Store
}

func (grantsDown) FindGrants(context.Context, state.GrantKey) ([]state.Grant, error) {
	return nil, fmt.Errorf("find grants: %w", state.ErrUnavailable)
}

func (grantsDown) PutGrant(context.Context, state.Grant, time.Duration) error {
	return fmt.Errorf("put grant: %w", state.ErrUnavailable)
}

func TestGrantLookupFailureRefusesTheCall(t *testing.T) {
	t.Parallel()
	mem := memory.New()
	t.Cleanup(func() { mem.Close() })
	rs := newReplicas(t, 1, grantsDown{mem}, askWrite, streamable.Options{}, nil)
	var asked atomic.Int32
	c := newBalancer(rs).client(t, client.WithElicitationHandler(answering("allow_once", &asked)))
	res := testkit.CallTool(t, c, "up__write", map[string]any{"path": "/tmp/x"})
	if !res.IsError || !strings.Contains(testkit.Text(res), "shared state") || len(rs.rec.Arguments()) != 0 || asked.Load() != 0 {
		t.Errorf("with the grants unreachable: result %q, upstream calls %d, forms %d; want a refusal naming the shared state, nothing forwarded, no one asked",
			testkit.Text(res), len(rs.rec.Arguments()), asked.Load())
	}
	var found bool
	for _, e := range rs.sinks[0].events(t) {
		if e.Event == audit.KindDecision && strings.Contains(e.Reason, "shared state") && strings.Contains(e.Error, "unavailable") {
			found = true
		}
	}
	if !found {
		t.Errorf("no audited refusal naming the unavailable shared state: %+v", rs.sinks[0].events(t))
	}
}
