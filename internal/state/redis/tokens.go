package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpwarden/mcpwarden/internal/state"
)

// IssueToken implements state.Tokens.
func (s *Store) IssueToken(ctx context.Context, token string, value json.RawMessage, ttl time.Duration) error {
	start := time.Now()
	return s.observe(state.OpIssueToken, start, s.issueToken(ctx, token, value, ttl))
}

func (s *Store) issueToken(ctx context.Context, token string, value json.RawMessage, ttl time.Duration) error {
	if err := state.CheckTTL("a token", ttl); err != nil {
		return err
	}
	ok, err := s.client.SetNX(ctx, s.keys.token(token), []byte(value), ttl).Result()
	switch {
	case err != nil:
		return s.fail(ctx, "issuing a token", err)
	case !ok:
		return fmt.Errorf("issuing a token: %w", state.ErrExists)
	}
	return nil
}

// ConsumeToken implements state.Tokens: one GETDEL, so exactly one
// consumer gets the value.
func (s *Store) ConsumeToken(ctx context.Context, token string) (json.RawMessage, error) {
	start := time.Now()
	v, err := s.client.GetDel(ctx, s.keys.token(token)).Bytes()
	switch {
	case errors.Is(err, goredis.Nil):
		err = fmt.Errorf("consuming a token: %w", state.ErrNotFound)
	case err != nil:
		err = s.fail(ctx, "consuming a token", err)
	}
	if err != nil {
		return nil, s.observe(state.OpConsumeToken, start, err)
	}
	return v, s.observe(state.OpConsumeToken, start, nil)
}
