//go:build unix

package redis_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/state/redis"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// TestPausedRedisRefusesWithinTwoSeconds pauses Redis (SIGSTOP: its
// connections stay open, nothing answers) and checks that every operation
// fails closed within the documented 2 s in total — dial, pool wait, read
// and retries together — rather than a read timeout per attempt.
func TestPausedRedisRefusesWithinTwoSeconds(t *testing.T) {
	t.Parallel()
	srv := testkit.StartRedis(t)
	s := open(t, srv, redis.Options{Namespace: "pause", Timeout: redis.DefaultTimeout})
	ctx := t.Context()
	g := state.Grant{Key: state.GrantKey{Session: "s1", Principal: "alice", Tool: "mcp:fs:write"}, Answer: state.AllowSession, Scope: json.RawMessage(`{}`)}
	if err := s.PutGrant(ctx, g, time.Minute); err != nil {
		t.Fatalf("PutGrant: %v", err)
	}
	srv.Pause()

	ops := map[string]func() error{
		"Check":      func() error { return s.Check(ctx) },
		"FindGrants": func() error { _, err := s.FindGrants(ctx, g.Key); return err },
		"PutGrant":   func() error { return s.PutGrant(ctx, g, time.Minute) },
		"ConsumeToken": func() error {
			_, err := s.ConsumeToken(ctx, "t")
			return err
		},
		"PublishAsk":  func() error { return s.PublishAsk(ctx, state.Ask{ID: "a", AskedAt: time.Now()}, time.Minute) },
		"WaitAnswer":  func() error { _, err := s.WaitAnswer(ctx, "a"); return err },
		"PendingAsks": func() error { _, err := s.PendingAsks(ctx); return err },
		"LoadSession": func() error { _, err := s.LoadSession(ctx, "s1"); return err },
		"Incr":        func() error { _, err := s.Incr(ctx, "k", time.Minute); return err },
	}
	// Slack for a loaded machine running with -race; the bug was 4.2 s.
	const slack = time.Second
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			err := op()
			d := time.Since(start)
			if !errors.Is(err, state.ErrUnavailable) {
				t.Errorf("%s with Redis paused: %v, want ErrUnavailable", name, err)
			}
			if d > redis.DefaultTimeout+slack {
				t.Errorf("%s with Redis paused took %s to fail; the bound is %s in total", name, d.Round(time.Millisecond), redis.DefaultTimeout)
			}
			t.Logf("%s refused after %s", name, d.Round(time.Millisecond))
		})
	}
}
