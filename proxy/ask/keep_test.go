package ask

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/state/memory"
)

// TestStoredGrantWithoutAnAllowAnswerDenies: a grant in the store whose
// answer is not AllowSession (a zero value, a deny, an answer no grant is
// made of) denies the calls it covers instead of allowing them, so that a
// grant written wrongly, or by a replica that means something else by it,
// fails closed.
func TestStoredGrantWithoutAnAllowAnswerDenies(t *testing.T) {
	t.Parallel()
	key := GrantKey{Principal: "alice", Tool: "mcp:fs:write", Rule: "ask: mcp:fs:write"}
	target := Target{Pathless: true, Earns: true}
	scope, err := json.Marshal(ScopeFor(target, state.AllowSession))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		answer state.Answer
		want   state.Answer
	}{
		{"a session allow allows", state.AllowSession, state.AllowSession},
		{"a session deny denies", state.DenySession, state.DenySession},
		{"the zero answer denies", state.Answer(0), state.DenySession},
		{"an allow of one call is no grant and denies", state.AllowOnce, state.DenySession},
		{"nothing answered denies", state.None, state.DenySession},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := memory.New()
			k := Keeper{Store: store, GrantTTL: time.Hour}
			if err := store.PutGrant(t.Context(), state.Grant{Key: grantKey("s1", key), Answer: tt.answer, Scope: scope}, k.GrantTTL); err != nil {
				t.Fatal(err)
			}
			got, err := k.Standing(t.Context(), "s1", key, target)
			if err != nil || got != tt.want {
				t.Errorf("Standing = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}
