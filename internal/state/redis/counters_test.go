package redis_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/state/redis"
	"github.com/mcpwarden/mcpwarden/internal/state/statetest"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// TestPolicyStateConformance runs the counters and labels suite with two
// clients of one Redis, as two replicas; each test gets its own
// namespace.
func TestPolicyStateConformance(t *testing.T) {
	t.Parallel()
	srv := testkit.StartRedis(t)
	statetest.RunPolicyState(t, func(t *testing.T) (state.PolicyState, state.PolicyState) {
		ns := strings.NewReplacer(" ", "_", "/", "_").Replace(t.Name())
		o := redis.Options{Namespace: ns}
		return open(t, srv, o), open(t, srv, o)
	})
}

func TestCountingFailsClosedWhenRedisIsGone(t *testing.T) {
	t.Parallel()
	srv := testkit.StartRedis(t)
	s := open(t, srv, redis.Options{Namespace: "gone", Timeout: 300 * time.Millisecond})
	srv.Kill()
	if _, err := s.Incr(t.Context(), "k", time.Minute); !errors.Is(err, state.ErrUnavailable) {
		t.Errorf("Incr = %v, want ErrUnavailable", err)
	}
	if _, err := s.ArmedLabels(t.Context(), "s:1"); !errors.Is(err, state.ErrUnavailable) {
		t.Errorf("ArmedLabels = %v, want ErrUnavailable", err)
	}
	if err := s.ArmLabels(t.Context(), "s:1", []state.ArmedLabel{{Label: "x"}}, time.Minute); !errors.Is(err, state.ErrUnavailable) {
		t.Errorf("ArmLabels = %v, want ErrUnavailable", err)
	}
}
