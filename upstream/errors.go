package upstream

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
)

// Errors callers branch on. Each but ErrNoPeer is wrapped in an error
// naming the server (and the tool, for a call).
var (
	// ErrUnknownServer is returned for a server name the pool was not
	// given, or that Reconcile removed.
	ErrUnknownServer = errors.New("unknown upstream server")
	// ErrUnavailable is returned while a server is down: it has not started
	// yet, is being restarted, or the pool is closed. The error says when the
	// next attempt is due and why the last one failed.
	ErrUnavailable = errors.New("upstream unavailable")
	// ErrBusy is returned when a server has MaxConcurrentCalls calls in
	// flight and MaxQueuedCalls more waiting.
	ErrBusy = errors.New("upstream busy")
	// ErrTimeout is returned when a call got no answer within the server's
	// CallTimeout; the upstream was sent notifications/cancelled for it.
	ErrTimeout = errors.New("upstream call timed out")
	// ErrResultTooLarge is returned by Call when the upstream's answer
	// exceeds the server's MaxResultBytes. The answer was discarded while
	// it was read.
	ErrResultTooLarge = errors.New("upstream result too large")
	// ErrNoPeer is returned to an upstream's request when no client side
	// is attached to answer it (see Peer).
	ErrNoPeer = errors.New("no client is attached to answer this request")
)

// A NotSentError is a call or request that failed before anything of it
// was sent to the upstream (the server is unknown, down, restarting or
// busy, or no child could be had), so the upstream did nothing: callers
// tell their clients it was not forwarded. Its text is Err's.
type NotSentError struct{ Err error }

func (e *NotSentError) Error() string { return e.Err.Error() }
func (e *NotSentError) Unwrap() error { return e.Err }

// notSent marks err, unless nil, as failing before anything was sent.
func notSent(err error) error {
	if err == nil {
		return nil
	}
	return &NotSentError{Err: err}
}

// An UnavailableError says why a server cannot take calls right now. It
// wraps ErrUnavailable and the error of the last attempt.
type UnavailableError struct {
	Server  string
	Attempt int           // the number of the next (or current) attempt
	RetryIn time.Duration // until the next attempt; 0 while one is in progress
	EverUp  bool          // whether the server was up before
	Closed  bool          // the pool is closed
	Removed bool          // Reconcile stopped the server: it was removed, or replaced for a new Spec
	Err     error         // why the last attempt failed or the session ended
}

func (e *UnavailableError) Error() string {
	var b strings.Builder
	if !e.Closed && !e.Removed && errors.Is(e.Err, ErrLoginRequired) {
		var scope *InsufficientScopeError
		if errors.As(e.Err, &scope) {
			fmt.Fprintf(&b, "upstream %q needs `mcpwarden login %s`: it wants OAuth scope %q, which its token lacks", e.Server, e.Server, scope.Scope)
			return b.String()
		}
		var moved *AuthServerChangedError
		if errors.As(e.Err, &moved) {
			fmt.Fprintf(&b, "upstream %q needs `mcpwarden login %s`: its authorization server is now %q, not %q where its client and token belong", e.Server, e.Server, moved.Now, moved.Was)
			return b.String()
		}
		fmt.Fprintf(&b, "upstream %q needs `mcpwarden login %s`: it has no OAuth token for it, or its token can no longer be refreshed", e.Server, e.Server)
		return b.String()
	}
	fmt.Fprintf(&b, "upstream %q ", e.Server)
	switch {
	case e.Removed:
		b.WriteString("was stopped by a reload")
	case e.Closed:
		b.WriteString("is closed")
	case e.EverUp:
		b.WriteString("is restarting")
	default:
		b.WriteString("is not available")
	}
	if !e.Closed && !e.Removed {
		if e.RetryIn > 0 {
			fmt.Fprintf(&b, " (attempt %d, next try in %s)", e.Attempt, e.RetryIn.Round(100*time.Millisecond))
		} else {
			fmt.Fprintf(&b, " (attempt %d in progress)", e.Attempt)
		}
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

func (e *UnavailableError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrUnavailable}
	}
	return []error{ErrUnavailable, e.Err}
}

// tooLargeResponse is the error of a tools/call whose response a
// lineLimiter put in place of one over MaxResultBytes (an error response
// with tooLargeCode; see lineLimiter.replacement), or nil for any other
// response. It is recognised on the response, by its code, before mcp-go's
// client turns it into an error: the client keeps the code only of the
// errors it knows and makes the others a bare errors.New of their message.
// An upstream may send the code itself; it then only has its call reported
// as too large, which it could as well cause by answering too much.
func tooLargeResponse(resp *transport.JSONRPCResponse) error {
	if resp == nil || resp.Error == nil || resp.Error.Code != tooLargeCode {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrResultTooLarge, resp.Error.Message)
}

// isShutdownNoise reports errors of closing a session that only say its
// child was stopped: by SIGTERM or SIGKILL (see process.stop), or a pipe
// closed already.
func isShutdownNoise(err error) bool {
	if errors.Is(err, os.ErrClosed) {
		return true
	}
	var exit *exec.ExitError
	return errors.As(err, &exit) && stoppedBySignal(exit.ProcessState)
}
