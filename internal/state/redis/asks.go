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

// PublishAsk implements state.Asks.
func (s *Store) PublishAsk(ctx context.Context, a state.Ask, ttl time.Duration) error {
	start := time.Now()
	return s.observe(state.OpPublishAsk, start, s.publishAsk(ctx, a, ttl))
}

func (s *Store) publishAsk(ctx context.Context, a state.Ask, ttl time.Duration) error {
	v, err := encodeExpiring("an ask", ttl, a)
	if err != nil {
		return err
	}
	keys := []string{s.keys.ask(a.ID), s.keys.asks(), s.keys.answer(a.ID)}
	n, err := publishAsk.Run(ctx, s.client, keys, v, ttl.Milliseconds(), a.AskedAt.UnixMilli(), a.ID).Int()
	switch {
	case err != nil:
		return s.fail(ctx, fmt.Sprintf("publishing ask %q", a.ID), err)
	case n == 0:
		return fmt.Errorf("publishing ask %q: %w", a.ID, state.ErrExists)
	}
	return nil
}

// PendingAsks implements state.Asks. IDs whose ask has expired are taken
// off the list as they are met.
func (s *Store) PendingAsks(ctx context.Context) ([]state.Ask, error) {
	start := time.Now()
	out, err := s.pendingAsks(ctx)
	return out, s.observe(state.OpPendingAsks, start, err)
}

func (s *Store) pendingAsks(ctx context.Context) ([]state.Ask, error) {
	ids, err := s.client.ZRange(ctx, s.keys.asks(), 0, -1).Result()
	if err != nil {
		return nil, s.fail(ctx, "listing pending asks", err)
	}
	out := make([]state.Ask, 0, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = s.keys.ask(id)
	}
	vals, err := s.client.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, s.fail(ctx, "reading pending asks", err)
	}
	var gone []any
	for i, v := range vals {
		str, ok := v.(string)
		if !ok {
			gone = append(gone, ids[i])
			continue
		}
		var a state.Ask
		if err := json.Unmarshal([]byte(str), &a); err != nil {
			return nil, fmt.Errorf("decoding ask %q: %w", ids[i], err)
		}
		out = append(out, a)
	}
	if len(gone) > 0 {
		if err := s.client.ZRem(ctx, s.keys.asks(), gone...).Err(); err != nil {
			return nil, s.fail(ctx, "dropping expired asks", err)
		}
	}
	return out, nil
}

// AnswerAsk implements state.Asks: one script takes the ask off the
// pending list, keeps the answer and publishes the ask's ID, so of
// concurrent answers exactly one wins.
func (s *Store) AnswerAsk(ctx context.Context, id string, answer json.RawMessage) error {
	start := time.Now()
	keys := []string{s.keys.ask(id), s.keys.asks(), s.keys.answer(id)}
	n, err := answerAsk.Run(ctx, s.client, keys, id, []byte(answer), s.keys.answers()).Int()
	switch {
	case err != nil:
		err = s.fail(ctx, fmt.Sprintf("answering ask %q", id), err)
	case n == 0:
		err = fmt.Errorf("answering ask %q: %w", id, state.ErrNotFound)
	}
	return s.observe(state.OpAnswerAsk, start, err)
}

// WaitAnswer implements state.Asks. The waiter is woken by the answers
// channel and also looks every Options.Poll; an ask that is neither
// pending nor answered is ErrNotFound.
func (s *Store) WaitAnswer(ctx context.Context, id string) (json.RawMessage, error) {
	start := time.Now()
	ans, err := s.waitAnswer(ctx, id)
	return ans, s.observe(state.OpWaitAnswer, start, err)
}

func (s *Store) waitAnswer(ctx context.Context, id string) (json.RawMessage, error) {
	tick := time.NewTicker(s.poll)
	defer tick.Stop()
	for {
		w, err := s.register(id)
		if err != nil {
			return nil, err
		}
		ans, done, err := s.look(ctx, id)
		if done || err != nil {
			s.unregister(id, w)
			return ans, err
		}
		select {
		case <-w.ch:
		case <-tick.C:
		case <-ctx.Done():
			s.unregister(id, w)
			return nil, fmt.Errorf("waiting for ask %q: %w", id, ctx.Err())
		}
		s.unregister(id, w)
	}
}

// look reads ask id and its answer in one command: the answer if there is
// one (done), ErrNotFound if the ask is neither pending nor answered.
func (s *Store) look(ctx context.Context, id string) (json.RawMessage, bool, error) {
	vals, err := s.client.MGet(ctx, s.keys.ask(id), s.keys.answer(id)).Result()
	if err != nil {
		return nil, true, s.fail(ctx, fmt.Sprintf("waiting for ask %q", id), err)
	}
	if ans, ok := vals[1].(string); ok {
		return json.RawMessage(ans), true, nil
	}
	if _, ok := vals[0].(string); !ok {
		return nil, true, fmt.Errorf("waiting for ask %q: %w", id, state.ErrNotFound)
	}
	return nil, false, nil
}

// register returns the wake of ask id, shared by its waiters.
func (s *Store) register(id string) (*wake, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, state.ErrClosed
	}
	w, ok := s.waiters[id]
	if !ok {
		w = &wake{ch: make(chan struct{})}
		s.waiters[id] = w
	}
	w.n++
	return w, nil
}

// unregister forgets one waiter of w, and w with its last waiter.
func (s *Store) unregister(id string, w *wake) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.n--
	if w.n == 0 && s.waiters[id] == w {
		delete(s.waiters, id)
	}
}

// WithdrawAsk implements state.Asks.
func (s *Store) WithdrawAsk(ctx context.Context, id string) (json.RawMessage, bool, error) {
	start := time.Now()
	keys := []string{s.keys.ask(id), s.keys.asks(), s.keys.answer(id)}
	v, err := withdrawAsk.Run(ctx, s.client, keys, id).Text()
	switch {
	case errors.Is(err, goredis.Nil):
		return nil, false, s.observe(state.OpWithdrawAsk, start, nil)
	case err != nil:
		return nil, false, s.observe(state.OpWithdrawAsk, start, s.fail(ctx, fmt.Sprintf("withdrawing ask %q", id), err))
	}
	return json.RawMessage(v), true, s.observe(state.OpWithdrawAsk, start, nil)
}
