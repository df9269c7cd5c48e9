package upstream

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Waiting for a server that is starting. A call to a server whose attempt
// to start is in progress (its first, or a restart after its backoff)
// waits for the attempt to end, which init_timeout bounds, rather than
// failing at once: a server that comes up serves it. One that is down
// between attempts still fails fast.

// WaitStarted returns when every server in the pool has ended its first
// attempt to start, succeeded or failed, or when ctx ends, with ctx's
// error. With Options.Background it is how to learn that the pool has
// started; without, Start has waited for it already.
func (p *Pool) WaitStarted(ctx context.Context) error {
	for _, s := range *p.servers.Load() {
		select {
		case <-s.started:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// startingLocked reports whether an attempt to start the server is in
// progress and may still bring it up. s.mu is held.
func (s *server) startingLocked() bool {
	return (s.sess == nil || s.sess.isLost() && errors.Is(s.sess.lostErr, errSessionExpired)) && s.retryAt.IsZero() && !s.closed && s.retired == notRetired && s.ctx.Err() == nil
}

// errSessionExpired is why a remote server's session ended when the
// server answered 404 for it: it restarted or expired the session. The
// supervisor initializes a new one at once (EventReinitialized), unless the
// session lived less than minSessionLife, which is then a loss like any
// other, retried with backoff, so a server that forgets every session is
// not re-initialized in a loop.
var errSessionExpired = errors.New("the upstream no longer knows the session (HTTP 404)")

const minSessionLife = time.Second

// busy reports whether the server, or one of its isolated children, has
// calls in flight or queued.
func (s *server) busy() bool {
	return len(s.gate.slots) > 0 || s.gate.waiting.Load() > 0 || s.kids.busy()
}

// isRetired reports whether Reconcile removed or replaced the server.
func (s *server) isRetired() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.retired != notRetired
}

// drainThenStop stops a server that Reconcile replaced once its calls in
// flight and queued have ended; each is bounded by its CallTimeout, and
// Close ends the wait.
func (s *server) drainThenStop() {
	s.logger.Info("upstream replaced by a reload; letting its calls in flight finish")
	for s.busy() && sleep(s.ctx, 20*time.Millisecond) {
	}
	s.cancel()
}

// retireSession stops sess, which a new session replaces, once the calls
// in flight on it have ended (or ctx has: Close or Reconcile stops the
// server), in the background: calls that reached the upstream before it
// forgot the session may still be answered, and those it refuses with 404
// are sent again on the new session.
func (s *server) retireSession(ctx context.Context, sess *session) {
	s.env.group.Go(func() {
		for sess.inflight.Load() > 0 && sleep(ctx, 20*time.Millisecond) {
		}
		sess.stop()
	})
}

// wakeLocked tells whoever waits for the server's state to change that it
// did. s.mu is held.
func (s *server) wakeLocked() {
	close(s.wake)
	s.wake = make(chan struct{})
}

// await returns the server's session, waiting while an attempt to start it
// is in progress; it fails at once while the server is down between
// attempts, and with a "still starting" error when ctx ends first.
func (s *server) await(ctx context.Context) (*session, error) {
	begin := time.Now()
	for {
		s.mu.Lock()
		if s.sess != nil && !s.sess.isLost() {
			sess := s.sess
			s.mu.Unlock()
			return sess, nil
		}
		if !s.startingLocked() {
			err := s.unavailableLocked()
			s.mu.Unlock()
			return nil, err
		}
		wake, attempt := s.wake, s.attempt
		s.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, &StartingError{Server: s.name, Attempt: attempt, Waited: time.Since(begin), Err: context.Cause(ctx)}
		}
	}
}

// A StartingError says that a call gave up waiting for a server that is
// still starting. It wraps ErrUnavailable and why the wait ended.
type StartingError struct {
	Server  string
	Attempt int           // the attempt in progress
	Waited  time.Duration // how long the call waited
	Err     error         // why the wait ended (the call's timeout, or its cancellation)
}

func (e *StartingError) Error() string {
	return fmt.Sprintf("upstream %q is still starting (attempt %d in progress; waited %s): %v", e.Server, e.Attempt, e.Waited.Round(time.Millisecond), e.Err)
}

func (e *StartingError) Unwrap() []error { return []error{ErrUnavailable, e.Err} }
