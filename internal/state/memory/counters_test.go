package memory_test

import (
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/state/memory"
	"github.com/mcpwarden/mcpwarden/internal/state/statetest"
)

func TestPolicyStateConformance(t *testing.T) {
	t.Parallel()
	statetest.RunPolicyState(t, func(*testing.T) (state.PolicyState, state.PolicyState) {
		p := &memory.PolicyState{}
		return p, p
	})
}
