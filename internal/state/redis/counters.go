package redis

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpwarden/mcpwarden/internal/state"
)

var _ state.PolicyState = (*Store)(nil)

// incrWindow adds one to the counter KEYS[1] and, when that starts it (or
// it has no expiry), expires it ARGV[1] ms from now: the window. One
// script, so that no INCR can see a counter without its window.
var incrWindow = goredis.NewScript(`
local n = redis.call('INCR', KEYS[1])
if n == 1 or redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return n
`)

// armLabels sets each label ARGV[2k] to its arming ARGV[2k+1] in the hash
// KEYS[1] unless it is there, and expires the hash ARGV[1] ms from now.
var armLabels = goredis.NewScript(`
for i = 2, #ARGV, 2 do
  redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1])
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
`)

// counter is a limit counter; its key is hashed, since it holds a
// session id or principal.
func (k keys) counter(key string) string { return k.prefix + "counter:" + digest(key) }

// labels is the hash of the labels armed in a scope (label → arming
// JSON); the scope is hashed like a grant's session.
func (k keys) labels(scope string) string { return k.prefix + "labels:" + digest(scope) }

// Incr implements state.Counters with one script per call, atomic in
// Redis, the window timed by Redis's clock.
func (s *Store) Incr(ctx context.Context, key string, window time.Duration) (int64, error) {
	if err := state.CheckWindow(window); err != nil {
		return 0, err
	}
	n, err := incrWindow.Run(ctx, s.client, []string{s.keys.counter(key)}, window.Milliseconds()).Int64()
	if err != nil {
		return 0, s.fail(ctx, "counting", err)
	}
	return n, nil
}

// ArmLabels implements state.Labels.
func (s *Store) ArmLabels(ctx context.Context, scope string, labels []state.ArmedLabel, ttl time.Duration) error {
	if err := state.CheckTTL("armed labels", ttl); err != nil {
		return err
	}
	args := []any{ttl.Milliseconds()}
	for _, l := range labels {
		v, err := json.Marshal(l)
		if err != nil {
			return fmt.Errorf("encoding an armed label: %w", err)
		}
		args = append(args, l.Label, v)
	}
	if err := armLabels.Run(ctx, s.client, []string{s.keys.labels(scope)}, args...).Err(); err != nil {
		return s.fail(ctx, "arming labels", err)
	}
	return nil
}

// ArmedLabels implements state.Labels.
func (s *Store) ArmedLabels(ctx context.Context, scope string) ([]state.ArmedLabel, error) {
	m, err := s.client.HGetAll(ctx, s.keys.labels(scope)).Result()
	if err != nil {
		return nil, s.fail(ctx, "reading armed labels", err)
	}
	out := make([]state.ArmedLabel, 0, len(m))
	for label, v := range m {
		var l state.ArmedLabel
		if err := json.Unmarshal([]byte(v), &l); err != nil || l.Label != label {
			// Not what this package writes: fail closed rather than
			// drop a label that may be armed.
			return nil, fmt.Errorf("reading armed labels: label %q is stored as %q: %w", label, v, state.ErrUnavailable)
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b state.ArmedLabel) int { return cmp.Compare(a.Label, b.Label) })
	return out, nil
}

// DisarmLabels implements state.Labels.
func (s *Store) DisarmLabels(ctx context.Context, scope string) error {
	if err := s.client.Del(ctx, s.keys.labels(scope)).Err(); err != nil {
		return s.fail(ctx, "disarming labels", err)
	}
	return nil
}
