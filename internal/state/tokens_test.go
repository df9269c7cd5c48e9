package state_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/state/memory"
)

func TestJSONTokensAreSingleUse(t *testing.T) {
	t.Parallel()
	ctx, store := t.Context(), memory.New()
	type value struct{ N int }
	if err := state.IssueJSON(ctx, store, "t", value{7}, time.Minute); err != nil {
		t.Fatal(err)
	}
	var got value
	if found, err := state.ConsumeJSON(ctx, store, "t", &got); !found || err != nil || got.N != 7 {
		t.Fatalf("the first take = %v, %v, %+v; want the value", found, err, got)
	}
	if found, err := state.ConsumeJSON(ctx, store, "t", &got); found || err != nil {
		t.Errorf("the second take = %v, %v; want nothing: the token is single use", found, err)
	}
	// A value this reader cannot hold is no value for it.
	if err := store.IssueToken(ctx, "u", json.RawMessage(`[1]`), time.Minute); err != nil {
		t.Fatal(err)
	}
	if found, err := state.ConsumeJSON(ctx, store, "u", &got); found || err != nil {
		t.Errorf("a value of another shape = %v, %v; want not found", found, err)
	}
}
