package sessiontable

import (
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/telemetry"
)

// TestSessionTableExpiresOnlyIdleSessions drives the table's clock by
// hand: a session is idle from when its ID is sent or its last request
// ended, never while a request is in progress.
func TestSessionTableExpiresOnlyIdleSessions(t *testing.T) {
	t.Parallel()
	const idle = time.Minute
	ids := New(Limits{IdleTimeout: idle})
	open := func() string {
		res, _, err := ids.Reserve("p")
		if err != nil {
			t.Fatal(err)
		}
		id := ids.Generate()
		if !ids.Claim(id, res) {
			t.Fatal("claim failed")
		}
		return id
	}
	quiet, busy, ended := open(), open(), open()
	if live, owned := ids.Begin(busy, "p"); !live || !owned {
		t.Fatal("begin on an owned session failed")
	}
	if live, owned := ids.Begin(ended, "p"); !live || !owned {
		t.Fatal("begin on an owned session failed")
	}
	ids.End(ended)
	if got := ids.Expire(time.Now().Add(idle / 2)); len(got) != 0 {
		t.Errorf("expired %v before the idle timeout", got)
	}
	got := ids.Expire(time.Now().Add(idle + time.Second))
	slices.Sort(got)
	want := []string{quiet, ended}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("expired %v, want the quiet and the ended sessions %v, not the busy one %s", got, want, busy)
	}
	if _, err := ids.Validate(quiet); err == nil {
		t.Error("an expired session still validates")
	}
	if live, principals, reserved := ids.Counts(); live != 1 || principals != 1 || reserved != 0 {
		t.Errorf("after expiry: %d live, %d principals, %d reservations; want the busy session only", live, principals, reserved)
	}
	ids.End(busy)
	if got := ids.Expire(time.Now().Add(idle + time.Second)); len(got) != 1 || got[0] != busy {
		t.Errorf("expired %v once the busy session's request ended, want it", got)
	}
	if live, principals, _ := ids.Counts(); live != 0 || principals != 0 {
		t.Errorf("after every session expired: %d live, %d principals", live, principals)
	}
}

func TestSessionTableReservesUnderBothCaps(t *testing.T) {
	t.Parallel()
	ids := New(Limits{MaxPerPrincipal: 2, Max: 3})
	a1, _, err := ids.Reserve("a")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ids.Reserve("a"); err != nil {
		t.Fatal(err)
	}
	var le *LimitError
	if _, _, err := ids.Reserve("a"); !errors.As(err, &le) || le.Setting != "http.max_sessions_per_principal" || le.Status != http.StatusTooManyRequests {
		t.Errorf("a third reservation of a: %v, want the per-principal cap", err)
	}
	if _, _, err := ids.Reserve("b"); err != nil {
		t.Fatalf("b under both caps: %v", err)
	}
	if _, _, err := ids.Reserve("c"); !errors.As(err, &le) || le.Setting != "http.max_sessions" || le.Status != http.StatusServiceUnavailable {
		t.Errorf("a fourth reservation: %v, want the overall cap", err)
	}
	ids.Release(a1)
	ids.Release(a1) // twice is once
	if _, _, err := ids.Reserve("c"); err != nil {
		t.Errorf("after a release: %v", err)
	}
	if _, principals, reserved := ids.Counts(); principals != 3 || reserved != 3 {
		t.Errorf("%d principals, %d reservations; want 3 and 3", principals, reserved)
	}
}

// openSession issues and claims a session for principal in the table.
func openSession(t *testing.T, ids *Table, principal string) string {
	t.Helper()
	res, evicted, err := ids.Reserve(principal)
	if err != nil || len(evicted) != 0 {
		t.Fatalf("reserving for %s: %v (evicted %v)", principal, err, evicted)
	}
	id := ids.Generate()
	if !ids.Claim(id, res) {
		t.Fatalf("claiming %s for %s", id, principal)
	}
	return id
}

// TestSessionTableEvictsOnlyIdleSessions: at a cap, reserve evicts the
// session idle longest among those the cap counts — never one with a
// request in progress, never a place reserved or a session not yet
// owned — and refuses when none is idle; one reserve never evicts the
// same session twice over both caps.
func TestSessionTableEvictsOnlyIdleSessions(t *testing.T) {
	t.Parallel()
	ids := New(Limits{MaxPerPrincipal: 2, Max: 4})
	a1 := openSession(t, ids, "a")
	a2 := openSession(t, ids, "a")
	b1 := openSession(t, ids, "b")
	if live, owned := ids.Begin(a1, "a"); !live || !owned {
		t.Fatal("begin on a1")
	}
	// a is at its cap; a1 is busy, so a2 goes although a1 is older.
	res, evicted, err := ids.Reserve("a")
	if err != nil || len(evicted) != 1 || evicted[0].ID != a2 || evicted[0].Cap != telemetry.CapPrincipal {
		t.Fatalf("reserve for a at its cap = %v, %+v; want a2 evicted under the principal cap", err, evicted)
	}
	ids.Release(res)
	// An issued, unowned session and a reservation fill the table.
	_ = ids.Generate()
	held, _, err := ids.Reserve("c")
	if err != nil {
		t.Fatal(err)
	}
	// Full: live a1 (busy), b1 (idle), the unowned one, and c's place.
	_, evicted, err = ids.Reserve("d")
	if err != nil || len(evicted) != 1 || evicted[0].ID != b1 || evicted[0].Cap != telemetry.CapGlobal {
		t.Fatalf("reserve for d at the overall cap = %v, %+v; want b1, the only idle owned session, evicted", err, evicted)
	}
	ids.Release(held)
	// Now a1 is the only owned session, and busy.
	for range 3 {
		_ = ids.Generate()
	}
	var le *LimitError
	if _, evicted, err := ids.Reserve("e"); !errors.As(err, &le) || le.Setting != "http.max_sessions" || len(evicted) != 0 {
		t.Errorf("reserve with every owned session busy = %v, evicted %+v; want the overall cap's refusal and nothing evicted", err, evicted)
	}
	ids.End(a1)
	if _, evicted, err := ids.Reserve("e"); err != nil || len(evicted) != 1 || evicted[0].ID != a1 {
		t.Errorf("reserve once a1 is idle = %v, %+v; want a1 evicted", err, evicted)
	}
}
