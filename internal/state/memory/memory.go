// Package memory is the embedded state.Store: everything in this
// process's memory, as mcpwarden keeps it with one replica. Expired
// values are dropped when next touched and swept on every write.
package memory

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/state"
)

var _ state.Store = (*Store)(nil)

// A Store is an in-process state.Store. The zero value is not usable; use
// New. It is safe for concurrent use.
type Store struct {
	PolicyState // limit counters and armed labels

	done      chan struct{} // closed by Close
	maxTokens int           // 0: no bound (see WithMaxTokens)

	mu       sync.Mutex
	closed   bool
	grants   map[state.GrantKey][]grantEntry
	asks     map[string]askEntry
	answers  map[string]tokenEntry    // kept until withdrawn or the ask's time to live ends
	woken    map[string]chan struct{} // closed when the ask is answered
	tokens   map[string]tokenEntry
	sessions map[string]sessionEntry
}

type grantEntry struct {
	g       state.Grant
	expires time.Time
}

type askEntry struct {
	a       state.Ask
	expires time.Time
}

type tokenEntry struct {
	value   json.RawMessage
	expires time.Time
}

type sessionEntry struct {
	s       state.Session
	expires time.Time
}

// An Option configures a Store.
type Option func(*Store)

// WithMaxTokens bounds the tokens a Store holds at once to n: IssueToken
// returns state.ErrFull while n unexpired tokens are held, so that tokens
// issued to whoever asks (a multi round-trip ask's request state) cannot
// fill the process's memory. n <= 0 sets no bound.
func WithMaxTokens(n int) Option {
	return func(s *Store) { s.maxTokens = n }
}

// New returns an empty Store.
func New(opts ...Option) *Store {
	s := &Store{
		done:     make(chan struct{}),
		grants:   map[state.GrantKey][]grantEntry{},
		asks:     map[string]askEntry{},
		answers:  map[string]tokenEntry{},
		woken:    map[string]chan struct{}{},
		tokens:   map[string]tokenEntry{},
		sessions: map[string]sessionEntry{},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Close ends every WaitAnswer in progress and refuses later calls. It is
// idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.done)
	}
	return nil
}

// Check implements state.Store: memory is always there until Close.
func (s *Store) Check(context.Context) error {
	if err := s.lock(); err != nil {
		return err
	}
	s.mu.Unlock()
	return nil
}

// lock takes the mutex unless the store is closed.
func (s *Store) lock() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return state.ErrClosed
	}
	return nil
}

// lockFor checks that a value (what) has a time to live and then takes
// the mutex, as lock does.
func (s *Store) lockFor(what string, ttl time.Duration) error {
	if err := state.CheckTTL(what, ttl); err != nil {
		return err
	}
	return s.lock()
}

// PutGrant implements state.Grants.
func (s *Store) PutGrant(_ context.Context, g state.Grant, ttl time.Duration) error {
	if err := s.lockFor("a grant", ttl); err != nil {
		return err
	}
	defer s.mu.Unlock()
	now := time.Now()
	live := s.liveGrantsLocked(g.Key, now)
	live = slices.DeleteFunc(live, func(e grantEntry) bool { return sameGrant(e.g, g) })
	s.grants[g.Key] = append(live, grantEntry{g: cloneGrant(g), expires: now.Add(ttl)})
	return nil
}

// FindGrants implements state.Grants.
func (s *Store) FindGrants(_ context.Context, key state.GrantKey) ([]state.Grant, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	live := s.liveGrantsLocked(key, time.Now())
	out := make([]state.Grant, 0, len(live))
	for _, e := range live {
		out = append(out, cloneGrant(e.g))
	}
	return out, nil
}

// RevokeSession implements state.Grants.
func (s *Store) RevokeSession(_ context.Context, session string) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	for k := range s.grants {
		if k.Session == session {
			delete(s.grants, k)
		}
	}
	return nil
}

func (s *Store) liveGrantsLocked(key state.GrantKey, now time.Time) []grantEntry {
	live := slices.DeleteFunc(s.grants[key], func(e grantEntry) bool { return !now.Before(e.expires) })
	if len(live) == 0 {
		delete(s.grants, key)
		return nil
	}
	s.grants[key] = live
	return live
}

func sameGrant(a, b state.Grant) bool {
	return a.Key == b.Key && a.Answer == b.Answer && string(a.Scope) == string(b.Scope)
}

func cloneGrant(g state.Grant) state.Grant {
	g.Scope = slices.Clone(g.Scope)
	return g
}

// PublishAsk implements state.Asks.
func (s *Store) PublishAsk(_ context.Context, a state.Ask, ttl time.Duration) error {
	if err := s.lockFor("an ask", ttl); err != nil {
		return err
	}
	defer s.mu.Unlock()
	now := time.Now()
	s.sweepLocked(now)
	if _, ok := s.asks[a.ID]; ok {
		return fmt.Errorf("publishing ask %q: %w", a.ID, state.ErrExists)
	}
	a.Body = slices.Clone(a.Body)
	s.asks[a.ID] = askEntry{a: a, expires: now.Add(ttl)}
	delete(s.answers, a.ID)
	return nil
}

// PendingAsks implements state.Asks.
func (s *Store) PendingAsks(context.Context) ([]state.Ask, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	now := time.Now()
	out := make([]state.Ask, 0, len(s.asks))
	for _, e := range s.asks {
		if now.Before(e.expires) {
			a := e.a
			a.Body = slices.Clone(a.Body)
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(x, y state.Ask) int {
		return cmp.Or(x.AskedAt.Compare(y.AskedAt), cmp.Compare(x.ID, y.ID))
	})
	return out, nil
}

// AnswerAsk implements state.Asks.
func (s *Store) AnswerAsk(_ context.Context, id string, answer json.RawMessage) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	e, ok := s.asks[id]
	if !ok || !time.Now().Before(e.expires) {
		delete(s.asks, id)
		return fmt.Errorf("answering ask %q: %w", id, state.ErrNotFound)
	}
	delete(s.asks, id)
	s.answers[id] = tokenEntry{value: slices.Clone(answer), expires: e.expires}
	if w, ok := s.woken[id]; ok {
		close(w)
		delete(s.woken, id)
	}
	return nil
}

// WaitAnswer implements state.Asks.
func (s *Store) WaitAnswer(ctx context.Context, id string) (json.RawMessage, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	if ans, ok := s.answers[id]; ok {
		s.mu.Unlock()
		return slices.Clone(ans.value), nil
	}
	if _, ok := s.asks[id]; !ok {
		s.mu.Unlock()
		return nil, fmt.Errorf("waiting for ask %q: %w", id, state.ErrNotFound)
	}
	w, ok := s.woken[id]
	if !ok {
		w = make(chan struct{})
		s.woken[id] = w
	}
	s.mu.Unlock()
	select {
	case <-w:
		s.mu.Lock()
		defer s.mu.Unlock()
		if ans, ok := s.answers[id]; ok {
			return slices.Clone(ans.value), nil
		}
		return nil, fmt.Errorf("waiting for ask %q: %w", id, state.ErrNotFound)
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.done:
		return nil, state.ErrClosed
	}
}

// WithdrawAsk implements state.Asks. It also forgets the answer, so the
// waiter that withdraws is the last to read it.
func (s *Store) WithdrawAsk(_ context.Context, id string) (json.RawMessage, bool, error) {
	if err := s.lock(); err != nil {
		return nil, false, err
	}
	defer s.mu.Unlock()
	delete(s.asks, id)
	if w, ok := s.woken[id]; ok {
		close(w)
		delete(s.woken, id)
	}
	ans, ok := s.answers[id]
	delete(s.answers, id)
	return ans.value, ok, nil
}

// IssueToken implements state.Tokens.
func (s *Store) IssueToken(_ context.Context, token string, value json.RawMessage, ttl time.Duration) error {
	if err := s.lockFor("a token", ttl); err != nil {
		return err
	}
	defer s.mu.Unlock()
	now := time.Now()
	s.sweepLocked(now)
	if _, ok := s.tokens[token]; ok {
		return fmt.Errorf("issuing a token: %w", state.ErrExists)
	}
	if s.maxTokens > 0 && len(s.tokens) >= s.maxTokens {
		return fmt.Errorf("issuing a token: %d are held: %w", len(s.tokens), state.ErrFull)
	}
	s.tokens[token] = tokenEntry{value: slices.Clone(value), expires: now.Add(ttl)}
	return nil
}

// ConsumeToken implements state.Tokens.
func (s *Store) ConsumeToken(_ context.Context, token string) (json.RawMessage, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	e, ok := s.tokens[token]
	delete(s.tokens, token)
	if !ok || !time.Now().Before(e.expires) {
		return nil, fmt.Errorf("consuming a token: %w", state.ErrNotFound)
	}
	return e.value, nil
}

// HeldTokens returns how many tokens the Store holds, expired ones not
// counted.
func (s *Store) HeldTokens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	n := 0
	for _, e := range s.tokens {
		if now.Before(e.expires) {
			n++
		}
	}
	return n
}

// SaveSession implements state.Sessions.
func (s *Store) SaveSession(_ context.Context, sess state.Session, idle time.Duration) error {
	if err := s.lockFor("a session", idle); err != nil {
		return err
	}
	defer s.mu.Unlock()
	now := time.Now()
	s.sweepLocked(now)
	sess.Capabilities = slices.Clone(sess.Capabilities)
	s.sessions[sess.ID] = sessionEntry{s: sess, expires: now.Add(idle)}
	return nil
}

// LoadSession implements state.Sessions.
func (s *Store) LoadSession(_ context.Context, id string) (state.Session, error) {
	if err := s.lock(); err != nil {
		return state.Session{}, err
	}
	defer s.mu.Unlock()
	e, ok := s.sessions[id]
	if !ok || !time.Now().Before(e.expires) {
		delete(s.sessions, id)
		return state.Session{}, fmt.Errorf("loading session %q: %w", id, state.ErrNotFound)
	}
	e.s.Capabilities = slices.Clone(e.s.Capabilities)
	return e.s, nil
}

// TouchSession implements state.Sessions.
func (s *Store) TouchSession(_ context.Context, id string, idle time.Duration) error {
	if err := s.lockFor("a session", idle); err != nil {
		return err
	}
	defer s.mu.Unlock()
	now := time.Now()
	e, ok := s.sessions[id]
	if !ok || !now.Before(e.expires) {
		delete(s.sessions, id)
		return fmt.Errorf("touching session %q: %w", id, state.ErrNotFound)
	}
	e.expires = now.Add(idle)
	s.sessions[id] = e
	return nil
}

// EndSession implements state.Sessions.
func (s *Store) EndSession(_ context.Context, id string) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	delete(s.sessions, id)
	return nil
}

// sweepLocked drops the expired asks, tokens and sessions, so that
// abandoned ones do not pile up.
func (s *Store) sweepLocked(now time.Time) {
	maps.DeleteFunc(s.asks, func(_ string, e askEntry) bool { return !now.Before(e.expires) })
	maps.DeleteFunc(s.answers, func(_ string, e tokenEntry) bool { return !now.Before(e.expires) })
	maps.DeleteFunc(s.tokens, func(_ string, e tokenEntry) bool { return !now.Before(e.expires) })
	maps.DeleteFunc(s.sessions, func(_ string, e sessionEntry) bool { return !now.Before(e.expires) })
}
