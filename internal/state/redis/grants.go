package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/state"
)

// PutGrant implements state.Grants.
func (s *Store) PutGrant(ctx context.Context, g state.Grant, ttl time.Duration) error {
	start := time.Now()
	return s.observe(state.OpPutGrant, start, s.putGrant(ctx, g, ttl))
}

func (s *Store) putGrant(ctx context.Context, g state.Grant, ttl time.Duration) error {
	member, err := encodeExpiring("a grant", ttl, g)
	if err != nil {
		return err
	}
	if err := putGrant.Run(ctx, s.client, []string{s.keys.grants(g.Key.Session)}, member, ttl.Milliseconds()).Err(); err != nil {
		return s.fail(ctx, "putting a grant", err)
	}
	return nil
}

// FindGrants implements state.Grants.
func (s *Store) FindGrants(ctx context.Context, key state.GrantKey) ([]state.Grant, error) {
	start := time.Now()
	gs, err := s.findGrants(ctx, key)
	return gs, s.observe(state.OpFindGrants, start, err)
}

func (s *Store) findGrants(ctx context.Context, key state.GrantKey) ([]state.Grant, error) {
	members, err := findGrants.Run(ctx, s.client, []string{s.keys.grants(key.Session)}).StringSlice()
	if err != nil {
		return nil, s.fail(ctx, "finding grants", err)
	}
	out := make([]state.Grant, 0, len(members))
	for _, m := range members {
		var g state.Grant
		if err := json.Unmarshal([]byte(m), &g); err != nil {
			return nil, fmt.Errorf("decoding a grant of session %q: %w", key.Session, err)
		}
		if g.Key == key {
			out = append(out, g)
		}
	}
	return out, nil
}

// RevokeSession implements state.Grants.
func (s *Store) RevokeSession(ctx context.Context, session string) error {
	start := time.Now()
	err := s.client.Del(ctx, s.keys.grants(session)).Err()
	if err != nil {
		err = s.fail(ctx, "revoking grants", err)
	}
	return s.observe(state.OpRevokeSession, start, err)
}
