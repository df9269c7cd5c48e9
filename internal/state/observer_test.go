package state_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/state/statetest"
)

func TestCountsTellFailuresFromExpectedOutcomes(t *testing.T) {
	t.Parallel()
	var c statetest.Counts
	c.Observe(state.OpConsumeToken, time.Millisecond, nil)
	c.Observe(state.OpConsumeToken, time.Millisecond, fmt.Errorf("consuming a token: %w", state.ErrNotFound))
	c.Observe(state.OpConsumeToken, time.Millisecond, fmt.Errorf("consuming a token: %w: %w", state.ErrUnavailable, errors.New("connection refused")))
	c.Observe(state.OpIssueToken, time.Millisecond, fmt.Errorf("issuing a token: %w", state.ErrExists))
	tests := []struct {
		name      string
		op        state.Op
		ops, errs uint64
	}{
		{"a not-found consume is counted but is no failure", state.OpConsumeToken, 3, 1},
		{"an issue that exists is no failure", state.OpIssueToken, 1, 0},
		{"an operation never made counts nothing", state.OpLoadSession, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := c.Ops(tt.op); got != tt.ops {
				t.Errorf("Ops(%s) = %d, want %d", tt.op, got, tt.ops)
			}
			if got := c.Errors(tt.op); got != tt.errs {
				t.Errorf("Errors(%s) = %d, want %d", tt.op, got, tt.errs)
			}
		})
	}
}

func TestEveryOpHasAName(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, op := range state.AllOps() {
		name := op.String()
		if name == "" || seen[name] || name[0] == 'O' {
			t.Errorf("op %d has name %q", uint8(op), name)
		}
		seen[name] = true
	}
}
