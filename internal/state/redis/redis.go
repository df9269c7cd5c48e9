// Package redis is the state.Store that replicas share through Redis 7 or
// Valkey. Every value is JSON under a key namespaced
// "mcpwarden:<namespace>:…"; time to live is a Redis expiry (for grants,
// a sorted set scored by expiry in Redis's own clock, so replicas whose
// clocks differ agree); what must be atomic (answering an ask, consuming
// a token) is one command or one Lua script. An answer wakes its waiter
// through one pub/sub subscription per Store, and each waiter also polls,
// so an answer published while the subscription was reconnecting is not
// missed.
//
// When Redis cannot be reached every method returns an error wrapping
// state.ErrUnavailable; there is no fall-back. The client reconnects by
// itself: go-redis redials with backoff on the next command, and its
// pub/sub resubscribes.
package redis

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpwarden/mcpwarden/internal/state"
)

// DefaultNamespace is the namespace Options.Namespace defaults to.
const DefaultNamespace = "default"

// Defaults of Options.
const (
	DefaultTimeout = 2 * time.Second
	// DefaultPoll is how often a waiter checks for its answer besides
	// being woken.
	DefaultPoll = time.Second
)

var _ state.Store = (*Store)(nil)

// Options configure a Store. URL is required; the zero value of every
// other field means its default.
type Options struct {
	// URL is redis://[user:password@]host:port[/db] or rediss://… (TLS).
	URL string
	// Password, when set, is the password to AUTH with, in place of one
	// in URL (config state.password_env names where it comes from).
	Password string
	// Namespace separates the keys of mcpwarden deployments sharing one
	// Redis; "" means DefaultNamespace.
	Namespace string
	// Timeout bounds one operation in total — pool wait, dial, write, read
	// and its retry together; 0 means DefaultTimeout.
	Timeout time.Duration
	// Poll is how often a waiter checks for its answer; 0 means
	// DefaultPoll.
	Poll time.Duration
	// Observer, when set, is told of every operation (for metrics).
	Observer state.Observer
}

// A Store is a state.Store in Redis. It is safe for concurrent use.
type Store struct {
	client *goredis.Client
	addr   string // host:port, for errors (never the password)
	keys   keys
	poll   time.Duration
	obs    state.Observer

	sub  *goredis.PubSub
	stop context.CancelFunc
	wg   sync.WaitGroup // the subscriber goroutine

	mu      sync.Mutex
	closed  bool
	waiters map[string]*wake
}

// A wake is closed when an answer to its ask is published; n counts the
// waiters sharing it.
type wake struct {
	ch chan struct{}
	n  int
}

// Open connects to Redis, checks that it answers, and subscribes to the
// answers channel. A Redis that cannot be reached is an error wrapping
// state.ErrUnavailable.
func Open(ctx context.Context, o Options) (*Store, error) {
	opt, err := clientOptions(o)
	if err != nil {
		return nil, err
	}
	ns := o.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	poll := o.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	s := &Store{
		client:  newClient(opt),
		addr:    opt.Addr,
		keys:    keys{prefix: "mcpwarden:" + ns + ":"},
		poll:    poll,
		obs:     o.Observer,
		waiters: map[string]*wake{},
	}
	if s.obs == nil {
		s.obs = state.NopObserver{}
	}
	if err := s.client.Ping(ctx).Err(); err != nil {
		_ = s.client.Close()
		return nil, s.fail(ctx, "connecting", err)
	}
	sub := s.client.Subscribe(ctx, s.keys.answers())
	if _, err := sub.Receive(ctx); err != nil { // the subscription's confirmation
		_ = sub.Close()
		_ = s.client.Close()
		return nil, s.fail(ctx, "subscribing to answers", err)
	}
	s.sub = sub
	subCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stop = stop
	s.wg.Add(1)
	go s.dispatch(subCtx)
	return s, nil
}

// Check implements state.Store with a PING.
func (s *Store) Check(ctx context.Context) error {
	if err := s.client.Ping(ctx).Err(); err != nil {
		return s.fail(ctx, "checking", err)
	}
	return nil
}

// Close ends the subscription and every WaitAnswer in progress, and
// closes the connections. It is idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for id, w := range s.waiters {
		close(w.ch)
		delete(s.waiters, id)
	}
	s.mu.Unlock()
	s.stop()
	err := s.sub.Close()
	s.wg.Wait()
	return errors.Join(err, s.client.Close())
}

// dispatch wakes the waiters of each ask whose ID is published on the
// answers channel, until ctx ends or the subscription closes. When the
// subscription comes back after a disconnection it wakes every waiter:
// an answer published meanwhile was not heard, so each looks again.
func (s *Store) dispatch(ctx context.Context) {
	defer s.wg.Done()
	msgs := s.sub.ChannelWithSubscriptions()
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-msgs:
			if !ok {
				return
			}
			s.mu.Lock()
			switch m := m.(type) {
			case *goredis.Message:
				if w, ok := s.waiters[m.Payload]; ok {
					close(w.ch)
					delete(s.waiters, m.Payload)
				}
			case *goredis.Subscription:
				s.obs.Resubscribed()
				for id, w := range s.waiters {
					close(w.ch)
					delete(s.waiters, id)
				}
			}
			s.mu.Unlock()
		}
	}
}

// fail wraps err from Redis: when ctx is done it is ctx's error (the
// caller gave up), after Close it is state.ErrClosed, and anything else is
// state.ErrUnavailable naming the server.
func (s *Store) fail(ctx context.Context, op string, err error) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %w", op, ctx.Err())
	case errors.Is(err, goredis.ErrClosed):
		return fmt.Errorf("%s: %w", op, state.ErrClosed)
	}
	return fmt.Errorf("%s (redis at %s): %w: %w", op, s.addr, state.ErrUnavailable, err)
}

// observe reports one operation, begun at start, to the observer and
// passes err on.
func (s *Store) observe(op state.Op, start time.Time, err error) error {
	s.obs.Observe(op, time.Since(start), err)
	return err
}

// newClient is a client for opt whose every command and pipeline is
// bounded by opt.ReadTimeout (Options.Timeout) in total, see bound.
func newClient(opt *goredis.Options) *goredis.Client {
	c := goredis.NewClient(opt)
	c.AddHook(bound{timeout: opt.ReadTimeout})
	return c
}

// clientOptions are the go-redis options for o: its URL, with timeouts
// and retries that make a Redis that is away fail a call quickly.
func clientOptions(o Options) (*goredis.Options, error) {
	opt, err := goredis.ParseURL(o.URL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text repeats the URL, which may hold a password
		}
		return nil, fmt.Errorf("parsing state url: %w", err)
	}
	if o.Password != "" {
		opt.Password = o.Password
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	opt.DialTimeout = timeout
	opt.ReadTimeout = timeout
	opt.WriteTimeout = timeout
	opt.ContextTimeoutEnabled = true
	opt.MaxRetries = 1
	opt.DialerRetries = 1 // a Redis that is away fails the call within one Timeout; the pool redials on the next
	opt.PoolTimeout = timeout
	opt.MinRetryBackoff = 50 * time.Millisecond
	opt.MaxRetryBackoff = time.Second
	return opt, nil
}
