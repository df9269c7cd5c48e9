package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// errCallTimeout is the cause of a call's context when CallTimeout ends it.
var errCallTimeout = errors.New("call_timeout expired")

// Call forwards a tools/call to the server, with params as given (the
// upstream tool name, the arguments and _meta), and returns its result
// object as the upstream sent it (mcp.ParseCallToolResult decodes it).
// While an attempt to start the server is in progress it waits for it
// (init_timeout bounds the attempt; CallTimeout and ctx the wait, which
// then fails with a *StartingError). It fails fast with ErrUnavailable
// while the server is down between attempts and with ErrBusy
// when its queue is full; it waits at most the server's CallTimeout
// (ErrTimeout) and refuses a result over its MaxResultBytes
// (ErrResultTooLarge). A call interrupted by the upstream going down, or
// by Reconcile or Close stopping it, fails with ErrUnavailable and is not
// retried: it may have had effects. A server isolated per principal or
// per session is served by the child of the caller route names, started
// on its first call, and Call sets route.Instance to that child's name; a
// call that would need one more child than isolation_max allows fails
// with ErrIsolationFull, and one with no route is refused. route is nil
// only for a server that is not isolated.
func (p *Pool) Call(ctx context.Context, name string, route *Route, params mcp.CallToolParams) (json.RawMessage, error) {
	s, err := p.server(name)
	if err != nil {
		return nil, notSent(err)
	}
	if s.kids != nil {
		var done func()
		if s, done, err = p.pick(ctx, s, route); err != nil {
			return nil, notSent(err)
		}
		defer done()
	}
	timeout := s.spec.callTimeout()
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errCallTimeout)
	defer cancel()
	if _, err := s.await(ctx); err != nil {
		return nil, notSent(err)
	}
	if err := s.gate.acquire(ctx); err != nil {
		if errors.Is(err, ErrBusy) {
			return nil, notSent(fmt.Errorf("upstream %q is busy: %d calls in flight and %d waiting (max_concurrent_calls, max_queued_calls); try again later: %w", name, cap(s.gate.slots), s.gate.maxWaiting, ErrBusy))
		}
		return nil, notSent(s.callError(ctx, nil, params.Name, timeout, err))
	}
	defer s.gate.release()
	sess, err := s.await(ctx)
	if err != nil {
		return nil, notSent(err)
	}
	if s.instance != "" {
		route.Instance = s.instanceName(sess)
	}
	var raw json.RawMessage
	err = sess.callTool(ctx, &raw, params)
	if errors.Is(err, transport.ErrSessionTerminated) && ctx.Err() == nil && s.ctx.Err() == nil {
		// The upstream answered 404 for the session: it did not run the
		// call. Send it again, once, on the session that replaces it.
		sess.markLost(fmt.Errorf("%w: %w", errSessionExpired, err))
		if sess, err = s.await(ctx); err != nil {
			return nil, notSent(err) // the upstream did not run the first
		}
		raw = nil
		err = sess.callTool(ctx, &raw, params)
	}
	if err != nil {
		return nil, s.callError(ctx, sess, params.Name, timeout, err)
	}
	if raw == nil {
		return nil, fmt.Errorf("calling %q on upstream %q: the transport kept no result", params.Name, name)
	}
	return raw, nil
}

// callError explains why a call to tool failed with err, and tells the
// supervisor when the failure says the session is gone.
func (s *server) callError(ctx context.Context, sess *session, tool string, timeout time.Duration, err error) error {
	switch {
	case s.ctx.Err() != nil: // stopped by Reconcile or Close: that is the cause
		s.mu.Lock()
		uerr := s.unavailableLocked()
		s.mu.Unlock()
		return fmt.Errorf("call to %q interrupted: %w", tool, uerr)
	case errors.Is(context.Cause(ctx), errCallTimeout):
		if sess == nil {
			return fmt.Errorf("upstream %q: call to %q got no free slot within call_timeout %s: %w", s.name, tool, timeout, ErrTimeout)
		}
		return fmt.Errorf("upstream %q: tool %q did not answer within call_timeout %s; the call was cancelled: %w", s.name, tool, timeout, ErrTimeout)
	case ctx.Err() != nil:
		return fmt.Errorf("calling %q on upstream %q: %w", tool, s.name, context.Cause(ctx))
	case errors.Is(err, ErrResultTooLarge):
		return fmt.Errorf("upstream %q: the result of %q exceeds max_result_bytes (%d bytes) and was discarded: %w", s.name, tool, s.spec.maxResultBytes(), ErrResultTooLarge)
	case errors.Is(err, transport.ErrTransportClosed) || errors.Is(err, transport.ErrSessionTerminated) || errors.Is(err, syscall.EPIPE):
		if sess.proc != nil && sess.proc.hasExited(true) {
			sess.markLost(sess.proc.exitError()) // says more than the closed pipe
		}
		sess.markLost(fmt.Errorf("connection lost: %w", err))
		<-sess.lost
		return fmt.Errorf("upstream %q went down during a call to %q (%w): %w", s.name, tool, ErrUnavailable, sess.lostErr)
	default:
		var te *transport.Error
		if errors.As(err, &te) {
			poke(s.suspect)
		}
		return fmt.Errorf("calling %q on upstream %q: %w", tool, s.name, err)
	}
}
