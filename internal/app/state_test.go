package app

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

func TestStartWithoutStateKeepsEverythingHere(t *testing.T) {
	t.Parallel()
	st := setupOf(t, "servers:\n  up:\n    url: "+standIn(t)+"\naudit:\n  path: audit.jsonl\n")
	a, err := Start(t.Context(), st, Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.state != nil {
		t.Errorf("without a state block the app opened %T", a.state)
	}
	if err := a.CheckState(t.Context()); err != nil {
		t.Errorf("CheckState without a state block: %v", err)
	}
}

func TestStartWithStateConnectsAndChecksIt(t *testing.T) {
	t.Parallel()
	r := testkit.StartRedis(t)
	st := setupOf(t, "servers:\n  up:\n    url: "+standIn(t)+"\naudit:\n  path: audit.jsonl\nstate:\n  url: "+r.URL()+"\n  namespace: apptest\n")
	a, err := Start(t.Context(), st, Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.CheckState(t.Context()); err != nil {
		t.Fatalf("CheckState with redis up: %v", err)
	}
	r.Kill()
	if err := a.CheckState(t.Context()); !errors.Is(err, state.ErrUnavailable) {
		t.Errorf("CheckState with redis down: %v, want ErrUnavailable", err)
	}
}

func TestStartWithUnreachableStateFailsInsteadOfUsingMemory(t *testing.T) {
	t.Parallel()
	st := setupOf(t, "servers:\n  up:\n    url: "+standIn(t)+"\naudit:\n  path: audit.jsonl\nstate:\n  url: redis://"+testkit.FreeAddr(t)+"\n")
	a, err := Start(t.Context(), st, Options{Version: "test"})
	if err == nil {
		a.Close()
		t.Fatal("Start with an unreachable state succeeded")
	}
	if !errors.Is(err, state.ErrUnavailable) || !strings.Contains(err.Error(), "state.url") {
		t.Errorf("Start with an unreachable state: %v, want ErrUnavailable naming state.url", err)
	}
}

func TestStartWithStatePasswordEnvUnsetIsAConfigError(t *testing.T) {
	t.Parallel()
	st := setupOf(t, "servers:\n  up:\n    url: "+standIn(t)+"\naudit:\n  path: audit.jsonl\nstate:\n  url: redis://127.0.0.1:1\n  password_env: MCPWARDEN_TEST_UNSET_REDIS_PASSWORD\n")
	a, err := Start(t.Context(), st, Options{Version: "test"})
	if err == nil {
		a.Close()
		t.Fatal("Start without the password succeeded")
	}
	if ce, ok := errors.AsType[*ConfigError](err); !ok || !strings.Contains(ce.Error(), "state.password_env") {
		t.Errorf("Start without the password: %v, want a ConfigError naming state.password_env", err)
	}
}
