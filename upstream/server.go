package upstream

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// A server is one upstream and its supervisor's view of it. Its spec never
// changes: Reconcile replaces a server whose Spec changed with a new one.
// Its state is guarded by its own mu, which only its methods take; it holds
// no pointer to its Pool (see supervisorEnv), so the pool looks servers up
// and asks them, and a supervisor never waits for the pool's lock.
type server struct {
	name   string
	spec   Spec
	env    *supervisorEnv // shared with the pool; the supervisor reaches no more of it
	logger *slog.Logger
	gate   *gate

	// kids are the isolated children of a server whose spec is isolated
	// (nil otherwise); instance names a child ("" for every other server),
	// whose events are not reported: its template's stand for it; owner
	// is whose child it is.
	kids     *children
	instance string
	owner    childKey
	// reach is what the client of a child isolated per session can be
	// sent (see Reach); nil for every other server, which may serve
	// clients that differ.
	reach *Reach

	// headerFunc is spec.HeaderFunc, or the one of a later equal Spec given
	// to Reconcile (a func cannot be compared, so a new one does not make
	// the Spec differ); dialled sessions call the current one.
	headerFunc atomic.Pointer[func(context.Context) map[string]string]

	ctx    context.Context // the supervisor's; ended by Close or Reconcile
	cancel context.CancelFunc
	done   chan struct{} // closed when the supervisor has ended
	prev   *server       // a retiring server of the same name, to wait for before the first attempt

	relist  chan struct{} // tools/list_changed arrived; capacity 1
	suspect chan struct{} // a call failed in the transport; capacity 1
	started chan struct{} // closed when the first attempt has ended

	mu        sync.Mutex
	sess      *session // nil while down
	tools     []mcp.Tool
	everUp    bool
	lastErr   error     // why it is down
	attempt   int       // the number of the next (or current) attempt
	retryAt   time.Time // when it is due; zero while it is in progress
	closed    bool
	retired   retirement    // by Reconcile
	stopError error         // from closing the last session at Close
	wake      chan struct{} // closed and replaced at every change of state (see wakeLocked)
}

// A retirement says why Reconcile stopped a server.
type retirement uint8

const (
	notRetired retirement = iota
	retiredRemoved
	retiredReplaced
)

// newServer is the server name with spec, its supervisor's context a
// child of parent; start starts it.
func newServer(parent context.Context, env *supervisorEnv, name string, spec Spec) *server {
	s := &server{
		name:    name,
		spec:    spec,
		env:     env,
		logger:  env.opts.Logger.With("server", name),
		gate:    newGate(spec.maxConcurrentCalls(), spec.maxQueuedCalls()),
		done:    make(chan struct{}),
		relist:  make(chan struct{}, 1),
		suspect: make(chan struct{}, 1),
		started: make(chan struct{}),
		wake:    make(chan struct{}),
		attempt: 1,
	}
	if spec.isolated() {
		s.kids = &children{}
	}
	s.ctx, s.cancel = context.WithCancel(parent)
	s.setHeaderFunc(spec.HeaderFunc)
	return s
}

// start starts s's supervisor in the pool's group, which calls first.Done
// once its first attempt has ended, bounded by ctx. The pool calls it
// holding its lock (or before it is shared), so that no supervisor starts
// after Close.
func (s *server) start(ctx context.Context, first *sync.WaitGroup) {
	first.Add(1)
	s.env.group.Go(func() {
		defer s.exit()
		s.run(ctx, func() {
			close(s.started)
			first.Done()
		})
	})
}

func (s *server) setHeaderFunc(f func(context.Context) map[string]string) {
	if f != nil {
		s.headerFunc.Store(&f)
	}
}

// headers calls the current HeaderFunc.
func (s *server) headers(ctx context.Context) map[string]string {
	if f := s.headerFunc.Load(); f != nil {
		return (*f)(ctx)
	}
	return nil
}

// dialSpec is the spec to dial, calling the current HeaderFunc, its
// sandboxed process's egress served by s.
func (s *server) dialSpec() Spec {
	spec := s.spec
	if spec.HeaderFunc != nil {
		spec.HeaderFunc = s.headers
	}
	spec.egress = s.serveEgress
	return spec
}

// toolsEqual reports whether two tool lists are the same, as JSON.
func toolsEqual(a, b []mcp.Tool) bool {
	if len(a) != len(b) {
		return false
	}
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// setUp records sess as the server's session and returns the event to
// report.
func (s *server) setUp(sess *session) Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev := Event{Server: s.name, Kind: EventRestarted, Tools: sess.tools}
	if sess.proc != nil {
		ev.Sandbox = sess.proc.sandbox
		ev.SandboxOff = sess.proc.sandbox == nil
		ev.SandboxExposed = sess.proc.exposed
	}
	if !s.everUp {
		ev.Kind = EventConnected
	}
	ev.ToolsChanged = !s.everUp || !toolsEqual(s.tools, sess.tools)
	s.sess, s.tools, s.everUp = sess, sess.tools, true
	s.lastErr, s.attempt, s.retryAt = nil, 1, time.Time{}
	s.wakeLocked()
	return ev
}

// setDown records that the server is down because of err, with attempt
// due after delay, and returns the event to report (without Kind).
func (s *server) setDown(err error, attempt int, delay time.Duration) Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sess, s.lastErr, s.attempt, s.retryAt = nil, err, attempt, time.Now().Add(delay)
	s.wakeLocked()
	return Event{Server: s.name, Err: s.unavailableLocked(), Attempt: s.attempt, RetryIn: delay}
}

// setConnecting records that an attempt is in progress.
func (s *server) setConnecting() {
	s.mu.Lock()
	s.sess, s.retryAt = nil, time.Time{}
	s.wakeLocked()
	s.mu.Unlock()
}

func (s *server) setStopError(err error) {
	s.mu.Lock()
	s.closed = true
	if err != nil && !isShutdownNoise(err) {
		s.stopError = err
	}
	s.sess = nil
	s.wakeLocked()
	s.mu.Unlock()
}

// currentTools returns the server's tools and, as current, why it cannot
// take calls.
func (s *server) currentTools() ([]mcp.Tool, error) {
	_, err := s.current()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools, err
}

// markClosed records that the pool is closed, once its supervisor has
// ended, and returns the error of closing the server's last session.
func (s *server) markClosed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return s.stopError
}

// current returns the server's session, or why there is none.
func (s *server) current() (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess != nil && !s.sess.isLost() {
		return s.sess, nil
	}
	return nil, s.unavailableLocked()
}

func (s *server) unavailableLocked() error {
	e := &UnavailableError{Server: s.name, Attempt: s.attempt, EverUp: s.everUp, Err: s.lastErr, Closed: s.closed, Removed: s.retired != notRetired}
	if !s.retryAt.IsZero() {
		e.RetryIn = max(time.Until(s.retryAt), 0)
	}
	if s.sess != nil && s.lastErr == nil && s.sess.isLost() { // lost, not yet noticed by the supervisor
		// lostErr is written before lost is closed: read only after.
		e.Err = s.sess.lostErr
	}
	return e
}

// retire marks s as stopped by Reconcile, so that calls still holding it
// fail saying so and its supervisor does not restart it.
func (s *server) retire(why retirement) {
	s.mu.Lock()
	s.retired = why
	s.wakeLocked()
	s.mu.Unlock()
}

// exit is the supervisor's last act: it reports a removal and lets
// whatever waits for s go on (the pool forgets a retiring server once it
// has ended: see Reconcile).
func (s *server) exit() {
	s.mu.Lock()
	s.sess, s.closed = nil, true
	why, stopErr := s.retired, s.stopError
	s.wakeLocked()
	s.mu.Unlock()
	if why != notRetired && stopErr != nil {
		s.logger.Warn("stopping upstream", "err", stopErr)
	}
	if why == retiredRemoved {
		s.logger.Info("upstream removed")
		s.emit(Event{Server: s.name, Kind: EventRemoved})
	}
	close(s.done)
}

// ended reports whether s's supervisor has ended.
func (s *server) ended() bool { return isClosed(s.done) }
