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

// SaveSession implements state.Sessions.
func (s *Store) SaveSession(ctx context.Context, sess state.Session, idle time.Duration) error {
	start := time.Now()
	return s.observe(state.OpSaveSession, start, s.saveSession(ctx, sess, idle))
}

func (s *Store) saveSession(ctx context.Context, sess state.Session, idle time.Duration) error {
	v, err := encodeExpiring("a session", idle, sess)
	if err != nil {
		return err
	}
	if err := s.client.Set(ctx, s.keys.session(sess.ID), v, idle).Err(); err != nil {
		return s.fail(ctx, fmt.Sprintf("saving session %q", sess.ID), err)
	}
	return nil
}

// LoadSession implements state.Sessions.
func (s *Store) LoadSession(ctx context.Context, id string) (state.Session, error) {
	start := time.Now()
	sess, err := s.loadSession(ctx, id)
	return sess, s.observe(state.OpLoadSession, start, err)
}

func (s *Store) loadSession(ctx context.Context, id string) (state.Session, error) {
	v, err := s.client.Get(ctx, s.keys.session(id)).Bytes()
	switch {
	case errors.Is(err, goredis.Nil):
		return state.Session{}, fmt.Errorf("loading session %q: %w", id, state.ErrNotFound)
	case err != nil:
		return state.Session{}, s.fail(ctx, fmt.Sprintf("loading session %q", id), err)
	}
	var sess state.Session
	if err := json.Unmarshal(v, &sess); err != nil {
		return state.Session{}, fmt.Errorf("decoding session %q: %w", id, err)
	}
	return sess, nil
}

// TouchSession implements state.Sessions.
func (s *Store) TouchSession(ctx context.Context, id string, idle time.Duration) error {
	start := time.Now()
	return s.observe(state.OpTouchSession, start, s.touchSession(ctx, id, idle))
}

func (s *Store) touchSession(ctx context.Context, id string, idle time.Duration) error {
	if err := state.CheckTTL("a session", idle); err != nil {
		return err
	}
	ok, err := s.client.PExpire(ctx, s.keys.session(id), idle).Result()
	switch {
	case err != nil:
		return s.fail(ctx, fmt.Sprintf("touching session %q", id), err)
	case !ok:
		return fmt.Errorf("touching session %q: %w", id, state.ErrNotFound)
	}
	return nil
}

// EndSession implements state.Sessions.
func (s *Store) EndSession(ctx context.Context, id string) error {
	start := time.Now()
	err := s.client.Del(ctx, s.keys.session(id)).Err()
	if err != nil {
		err = s.fail(ctx, fmt.Sprintf("ending session %q", id), err)
	}
	return s.observe(state.OpEndSession, start, err)
}
