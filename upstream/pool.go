package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Errors callers branch on. Each is wrapped in an error naming the server
// (and the tool, for a call).
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
)

// stopSettle is how long the supervisor of a stdio server whose child was
// stopped by SIGTERM, SIGINT or SIGHUP waits for the pool to be closed
// before it reports the loss (EventLost) and restarts the server.
const stopSettle = 500 * time.Millisecond

// Restart backoff defaults: the delay before a restart doubles from
// DefaultMinBackoff with every consecutive failure up to DefaultMaxBackoff,
// each delay jittered by ±20%. A session that stayed up for backoffReset
// counts as a success, so the next loss starts from the minimum again.
const (
	DefaultMinBackoff = 500 * time.Millisecond
	DefaultMaxBackoff = 30 * time.Second
	backoffReset      = 10 * time.Second
)

// Options configure a Pool. The zero value is usable.
type Options struct {
	// Logger receives connection events and upstream stderr; nil discards.
	Logger *slog.Logger
	// ClientInfo is what mcpwarden calls itself in initialize.
	ClientInfo mcp.Implementation
	// OnEvent, if set, is called for every change in a server's state (see
	// EventKind), including the first connect attempts made by Start and
	// Reconcile. Events of one server come in order, from that server's
	// supervisor goroutine; events of different servers may come
	// concurrently. OnEvent should return quickly (the server is not
	// restarted or re-listed meanwhile); it may call the Pool's methods
	// other than Reconcile and Close, which wait for supervisors (possibly
	// the calling one).
	OnEvent func(Event)
	// Peer, if set, gets the upstreams' notifications and answers their
	// requests to the client side (see Peer).
	Peer Peer
	// MinBackoff and MaxBackoff bound the delay between restart attempts;
	// 0 means DefaultMinBackoff and DefaultMaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// Background makes Start return at once, its servers' first attempts
	// going on in the background (reported by EventConnected or
	// EventFailed; see WaitStarted), so that one slow server delays
	// nothing. Calls to a server still starting wait for it (see Call).
	Background bool
}

// An EventKind says what happened to an upstream server.
type EventKind uint8

// Event kinds.
const (
	// EventConnected: the server is up for the first time; Tools is its
	// tool list.
	EventConnected EventKind = iota + 1
	// EventFailed: an attempt to start the server failed; Err says why and
	// when the next attempt is due (Attempt, RetryIn).
	EventFailed
	// EventLost: the session ended unexpectedly (the process exited, the
	// connection dropped); Err says why. Calls fail with ErrUnavailable until
	// EventRestarted.
	EventLost
	// EventRestarted: the server is up again after EventLost or after
	// failed attempts; Tools is its tool list, ToolsChanged whether it
	// differs from the one it had before.
	EventRestarted
	// EventToolsChanged: the server sent notifications/tools/list_changed
	// and its re-listed tools differ; Tools is the new list.
	EventToolsChanged
	// EventRemoved: Reconcile removed the server from the pool; its session
	// is closed and its process group stopped. It is the server's last
	// event. A server whose Spec changed is not removed but replaced: the
	// replacement reports EventConnected (or EventFailed) as a new server.
	EventRemoved
	// EventReinitialized: a remote server answered 404 for its session (it
	// restarted, or expired the session) and a new session was initialized
	// at once, without backoff; it is not a crash. Tools and ToolsChanged
	// are as for EventRestarted.
	EventReinitialized
)

func (k EventKind) String() string {
	switch k {
	case EventConnected:
		return "connected"
	case EventFailed:
		return "failed"
	case EventLost:
		return "lost"
	case EventRestarted:
		return "restarted"
	case EventToolsChanged:
		return "tools_changed"
	case EventRemoved:
		return "removed"
	case EventReinitialized:
		return "reinitialized"
	default:
		return "unknown"
	}
}

// MarshalText makes an EventKind its String in JSON and logs.
func (k EventKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// An Event is a change in one upstream server's state, as reported to
// Options.OnEvent.
type Event struct {
	Server string
	Kind   EventKind
	// Err is why the server is down (EventFailed, EventLost); it wraps
	// ErrUnavailable.
	Err error
	// Tools is the server's tool list after the event (EventConnected,
	// EventRestarted, EventToolsChanged). The slice is shared: do not
	// modify it.
	Tools []mcp.Tool
	// ToolsChanged reports, for EventRestarted, whether Tools differs from
	// the list before the restart; it is always true for EventToolsChanged.
	ToolsChanged bool
	// Attempt is the number of the next start attempt and RetryIn how long
	// until it (EventFailed, EventLost).
	Attempt int
	RetryIn time.Duration
}

// A Pool holds one supervised session per upstream server. Each server has
// a supervisor goroutine that starts it, watches it (the stdio child
// exiting, the connection dropping, calls failing on a closed transport),
// restarts it with exponential backoff when it goes down, and re-lists its
// tools after a restart and on notifications/tools/list_changed. A server
// that is down makes calls to it fail fast with ErrUnavailable; it never
// holds up the others. The set of servers is fixed at Start and changed
// only by Reconcile. A Pool is safe for concurrent use.
type Pool struct {
	// servers is replaced whole (copy on write) by Reconcile, so that
	// Call, Tools, Err, Session and Names read it without locking.
	servers atomic.Pointer[map[string]*server]
	info    mcp.Implementation
	logger  *slog.Logger
	opts    Options

	ctx       context.Context // ended by Close
	cancel    context.CancelFunc
	wg        sync.WaitGroup // the supervisors
	spawn     *spawner       // starts the stdio children; closed after the supervisors
	closeOnce sync.Once

	// mu is held only briefly, never across an upstream call or a stop: it
	// orders the replacing of servers, the starting of supervisors
	// (wg.Add) and Close.
	mu       sync.Mutex
	closed   bool               // by Close; no supervisor starts after it
	retiring map[string]*server // stopped by Reconcile, until their supervisor has ended

	changes atomic.Uint64 // see Changes
}

// Changes counts the events after which a server's tools are to be read
// again (EventConnected, EventRestarted, EventToolsChanged,
// EventReinitialized), over all servers; it is counted before the event is
// reported. One who read the tools of every server can tell from it
// whether any event came since.
func (p *Pool) Changes() uint64 { return p.changes.Load() }

// A server is one upstream and its supervisor's view of it. Its spec never
// changes: Reconcile replaces a server whose Spec changed with a new one.
type server struct {
	name   string
	spec   Spec
	pool   *Pool
	logger *slog.Logger
	gate   *gate

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

// Start connects to every server in specs concurrently: it starts or dials
// it, initializes the session and lists all its tools (following
// pagination). It returns when each has succeeded or failed its first
// attempt, or at once with Options.Background; a failure is kept on its
// server (see Err) and does not stop the others, and the server is retried
// in the background. ctx bounds the first attempts only: the sessions live
// until Close.
func Start(ctx context.Context, specs map[string]Spec, opts *Options) *Pool {
	if opts == nil {
		opts = &Options{}
	}
	p := &Pool{opts: *opts, logger: opts.Logger, info: opts.ClientInfo, retiring: map[string]*server{}}
	if p.logger == nil {
		p.logger = slog.New(slog.DiscardHandler)
	}
	if p.info.Name == "" {
		p.info = mcp.Implementation{Name: "mcpwarden", Version: "dev"}
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.spawn = newSpawner()
	servers := make(map[string]*server, len(specs))
	for name, spec := range specs {
		servers[name] = p.newServer(name, spec)
	}
	p.servers.Store(&servers)
	var first sync.WaitGroup
	for _, s := range servers {
		p.startLocked(ctx, s, &first) // nothing else can see p yet
	}
	if !opts.Background {
		first.Wait()
	}
	return p
}

func (p *Pool) newServer(name string, spec Spec) *server {
	s := &server{
		name:    name,
		spec:    spec,
		pool:    p,
		logger:  p.logger.With("server", name),
		gate:    newGate(spec.maxConcurrentCalls(), spec.maxQueuedCalls()),
		done:    make(chan struct{}),
		relist:  make(chan struct{}, 1),
		suspect: make(chan struct{}, 1),
		started: make(chan struct{}),
		wake:    make(chan struct{}),
		attempt: 1,
	}
	s.ctx, s.cancel = context.WithCancel(p.ctx)
	s.setHeaderFunc(spec.HeaderFunc)
	return s
}

// startLocked starts s's supervisor, which calls first.Done once its
// first attempt has ended, bounded by ctx. p.mu is held, or p not shared.
func (p *Pool) startLocked(ctx context.Context, s *server, first *sync.WaitGroup) {
	first.Add(1)
	p.wg.Go(func() {
		defer s.exit()
		s.run(ctx, func() {
			close(s.started)
			first.Done()
		})
	})
}

// Reconcile makes the pool serve specs, for a reloaded configuration. A
// server in specs but not in the pool is added and started as Start does;
// one in the pool but not in specs is removed: it leaves the pool at once
// (Call, Tools, Err and Session return ErrUnknownServer), its calls in
// flight fail with ErrUnavailable, its session is closed and its process
// group stopped, and EventRemoved is reported. A server whose Spec changed
// is replaced: new calls go to the new one, which reports EventConnected
// or EventFailed, and wait while it starts (see Call). The old one is
// stopped like a removed one (without EventRemoved): at once and before
// the new one's first attempt when it has no calls in flight; otherwise
// it drains, in the background, the new one starting meanwhile: its calls
// in flight (and queued) run to their end, bounded by its CallTimeout,
// then it is stopped, and it is not restarted if it goes down meanwhile.
// A server whose Spec is unchanged keeps running
// untouched, the same session; Specs are compared field by field, with nil
// and empty maps and slices equal and HeaderFunc compared only as set or
// not (a func cannot be compared; the new one is used from then on, by
// the running session too). Reconcile returns the names added, removed
// and restarted (replaced), each sorted, once the removed and replaced
// servers are stopped (but for those draining) and the new ones have
// succeeded or failed their
// first attempt; ctx bounds the first attempts only, failures are retried
// in the background (see Err). Concurrent calls are applied one at a time,
// each against the result of the one before; Reconcile after Close does
// nothing and returns nil lists. It must not be called from OnEvent.
func (p *Pool) Reconcile(ctx context.Context, specs map[string]Spec) (added, removed, restarted []string) {
	var stopping, draining []*server
	var first sync.WaitGroup
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, nil, nil
	}
	cur := *p.servers.Load()
	next := make(map[string]*server, len(specs))
	var starting []*server
	for name, spec := range specs {
		old, ok := cur[name]
		if ok && specEqual(old.spec, spec) {
			old.setHeaderFunc(spec.HeaderFunc)
			next[name] = old
			continue
		}
		earlier := p.retiring[name] // one removed or replaced by an earlier Reconcile, still stopping
		drain := false
		if ok {
			restarted = append(restarted, name)
			p.retireLocked(old, retiredReplaced)
			if drain = old.busy(); drain {
				draining = append(draining, old)
			} else {
				stopping = append(stopping, old)
			}
		} else {
			added = append(added, name)
		}
		s := p.newServer(name, spec)
		s.prev = p.retiring[name] // the replaced one, or one removed by an earlier Reconcile
		if drain {
			s.prev = earlier // not the draining one: it serves its calls while the new one starts
		}
		next[name] = s
		starting = append(starting, s)
	}
	for name, old := range cur {
		if _, ok := specs[name]; !ok {
			removed = append(removed, name)
			p.retireLocked(old, retiredRemoved)
			stopping = append(stopping, old)
		}
	}
	p.servers.Store(&next)
	for _, s := range stopping {
		s.cancel()
	}
	for _, s := range draining {
		p.wg.Go(s.drainThenStop)
	}
	for _, s := range starting {
		p.startLocked(ctx, s, &first)
	}
	p.mu.Unlock()

	for _, s := range stopping {
		<-s.done
	}
	first.Wait()
	slices.Sort(added)
	slices.Sort(removed)
	slices.Sort(restarted)
	if len(added)+len(removed)+len(restarted) > 0 {
		p.logger.Info("upstreams reconciled", "added", added, "removed", removed, "restarted", restarted)
	}
	return added, removed, restarted
}

// retireLocked marks s as stopped by Reconcile, so that calls still
// holding it fail saying so, and records it until its supervisor has ended
// so that a new server of the same name starts after that. p.mu is held.
func (p *Pool) retireLocked(s *server, why retirement) {
	s.mu.Lock()
	s.retired = why
	s.wakeLocked()
	s.mu.Unlock()
	p.retiring[s.name] = s
}

// exit is the supervisor's last act: it reports a removal, forgets a
// retiring server, and lets whatever waits for s go on.
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
	p := s.pool
	p.mu.Lock()
	if p.retiring[s.name] == s {
		delete(p.retiring, s.name)
	}
	p.mu.Unlock()
	close(s.done)
}

// specEqual reports whether a and b describe the same server: the same
// fields, with nil and empty maps and slices alike and HeaderFunc only set
// or not.
func specEqual(a, b Spec) bool {
	if (a.HeaderFunc == nil) != (b.HeaderFunc == nil) {
		return false
	}
	return reflect.DeepEqual(a.canonical(), b.canonical())
}

// canonical is s without HeaderFunc and with empty maps and slices nil.
func (s Spec) canonical() Spec {
	s.HeaderFunc = nil
	if len(s.Args) == 0 {
		s.Args = nil
	}
	if len(s.Env) == 0 {
		s.Env = nil
	}
	if len(s.Headers) == 0 {
		s.Headers = nil
	}
	return s
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

// dialSpec is the spec to dial, calling the current HeaderFunc.
func (s *server) dialSpec() Spec {
	spec := s.spec
	if spec.HeaderFunc != nil {
		spec.HeaderFunc = s.headers
	}
	return spec
}

// run is the server's supervisor: it (re)starts the server until the pool
// is closed or Reconcile stops it. startDone is called once the first
// attempt has ended.
func (s *server) run(startCtx context.Context, startDone func()) {
	ctx := s.ctx
	defer func() {
		if startDone != nil {
			startDone()
		}
	}()
	if s.prev != nil { // the old process group is gone before a new one starts
		<-s.prev.done
		s.prev = nil
	}
	failures := 0
	reinit := false // the attempt replaces an expired session
	for {
		dialCtx, cancel := context.WithCancel(ctx)
		stop := func() bool { return false }
		if startDone != nil { // the first attempt is bounded by Start's ctx too
			stop = context.AfterFunc(startCtx, cancel)
		}
		sess, err := dial(dialCtx, s.dialSpec(), s.pool.info, s.logger, s.pool.spawn, s.onNotification, s.clientOptions()...)
		stop()
		cancel()
		if ctx.Err() != nil {
			if sess != nil {
				s.setStopError(sess.stop())
			}
			return
		}
		if err != nil {
			failures++
			delay := s.pool.backoff(failures)
			ev := s.setDown(err, failures+1, delay)
			ev.Kind = EventFailed
			s.logger.Warn("upstream failed to start", "failures", failures, "retry_in", delay.Round(time.Millisecond), "err", err)
			s.emit(ev)
			if startDone != nil {
				startDone()
				startDone = nil
			}
			if !sleep(ctx, delay) {
				return
			}
			s.setConnecting()
			continue
		}

		up := time.Now()
		ev := s.setUp(sess)
		if reinit {
			ev.Kind, reinit = EventReinitialized, false
		}
		s.logger.Info("upstream ready", "transport", s.spec.Transport, "upstream", sess.info.Name, "version", sess.info.Version, "tools", len(sess.tools), "event", ev.Kind)
		s.emit(ev)
		if startDone != nil {
			startDone()
			startDone = nil
		}

		s.watch(ctx, sess)
		if sess.proc != nil && sess.proc.signalled() {
			// Whoever stopped the child may be stopping mcpwarden too (a
			// client ending its process tree): give Close a moment, so
			// that a shutdown is not reported as a crash.
			sleep(ctx, stopSettle)
		}
		if ctx.Err() != nil || s.isRetired() { // a draining server is not restarted
			s.setStopError(sess.stop())
			return
		}
		if errors.Is(sess.lostErr, errSessionExpired) && time.Since(up) >= minSessionLife {
			// Not a crash: the upstream forgot the session. Calls wait
			// for the new one (see await).
			s.logger.Info("upstream session expired; initializing a new one", "err", sess.lostErr)
			s.setConnecting()
			s.retireSession(ctx, sess)
			reinit = true
			continue
		}
		if time.Since(up) >= backoffReset {
			failures = 0
		}
		failures++
		delay := s.pool.backoff(failures)
		ev = s.setDown(sess.lostErr, failures+1, delay)
		ev.Kind = EventLost
		s.logger.Warn("upstream lost; restarting", "retry_in", delay.Round(time.Millisecond), "err", sess.lostErr)
		s.emit(ev)
		start := time.Now()
		sess.stop() // the old process group is gone before a new one starts
		if !sleep(ctx, delay-time.Since(start)) {
			return
		}
		s.setConnecting()
	}
}

// watch returns when sess is lost or ctx ends, re-listing tools when the
// upstream says they changed and checking the session when a call failed
// in the transport.
func (s *server) watch(ctx context.Context, sess *session) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sess.lost:
			return
		case <-s.relist:
			s.refreshTools(ctx, sess)
		case <-s.suspect:
			pctx, cancel := context.WithTimeout(ctx, min(s.spec.initTimeout(), 10*time.Second))
			err := sess.client.Ping(pctx)
			cancel()
			if err != nil && ctx.Err() == nil {
				sess.markLost(fmt.Errorf("a call failed in the transport and ping failed: %w", err))
			}
		}
	}
}

// refreshTools re-lists the tools of sess and reports a change.
func (s *server) refreshTools(ctx context.Context, sess *session) {
	lctx, cancel := context.WithTimeout(ctx, s.spec.initTimeout())
	tools, err := sess.listTools(lctx)
	cancel()
	if err != nil {
		if ctx.Err() == nil && !sess.isLost() {
			s.logger.Warn("re-listing tools after tools/list_changed", "err", err)
		}
		return
	}
	s.mu.Lock()
	if s.sess != sess || toolsEqual(s.tools, tools) {
		s.mu.Unlock()
		return
	}
	s.tools = tools
	s.mu.Unlock()
	s.logger.Info("upstream tools changed", "tools", len(tools))
	s.emit(Event{Server: s.name, Kind: EventToolsChanged, Tools: tools, ToolsChanged: true})
}

// onNotification is called by the transport's reader; it must not block.
func (s *server) onNotification(n mcp.JSONRPCNotification) {
	if n.Method == mcp.MethodNotificationToolsListChanged {
		poke(s.relist)
	}
	if p := s.pool.opts.Peer; p != nil {
		p.Notify(s.name, n)
	}
}

func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// sleep waits d or until ctx ends, reporting whether it waited d.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// backoff is the delay after the given number of consecutive failures.
func (p *Pool) backoff(failures int) time.Duration {
	lo, hi := orDefault(p.opts.MinBackoff, DefaultMinBackoff), orDefault(p.opts.MaxBackoff, DefaultMaxBackoff)
	d := lo
	for i := 1; i < failures && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

func (s *server) emit(e Event) {
	switch e.Kind {
	case EventConnected, EventRestarted, EventToolsChanged, EventReinitialized:
		s.pool.changes.Add(1)
	}
	if s.pool.opts.OnEvent != nil {
		s.pool.opts.OnEvent(e)
	}
}

// setUp records sess as the server's session and returns the event to
// report.
func (s *server) setUp(sess *session) Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev := Event{Server: s.name, Kind: EventRestarted, Tools: sess.tools}
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
	if s.sess != nil && s.lastErr == nil { // lost, not yet noticed by the supervisor
		e.Err = s.sess.lostErr
	}
	return e
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

// toolsEqual reports whether two tool lists are the same, as JSON.
func toolsEqual(a, b []mcp.Tool) bool {
	if len(a) != len(b) {
		return false
	}
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// Names returns the servers' names, sorted.
func (p *Pool) Names() []string {
	return slices.Sorted(maps.Keys(*p.servers.Load()))
}

// server returns the named server, or ErrUnknownServer.
func (p *Pool) server(name string) (*server, error) {
	s, ok := (*p.servers.Load())[name]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownServer, name)
	}
	return s, nil
}

// Err is nil when the server is up and can take calls, an error wrapping
// ErrUnavailable (an *UnavailableError) when it is not right now, or
// ErrUnknownServer.
func (p *Pool) Err(name string) error {
	s, err := p.server(name)
	if err != nil {
		return err
	}
	_, err = s.current()
	return err
}

// Tools returns the server's current tools: those it listed when it last
// (re)started or after its last tools/list_changed, and Err(name). While
// it is down, they are the tools it had when it was last up (nil if it
// never was). The slice is shared: do not modify it.
func (p *Pool) Tools(name string) ([]mcp.Tool, error) {
	s, err := p.server(name)
	if err != nil {
		return nil, err
	}
	_, err = s.current()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools, err
}

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
// retried: it may have had effects.
func (p *Pool) Call(ctx context.Context, name string, params mcp.CallToolParams) (json.RawMessage, error) {
	s, err := p.server(name)
	if err != nil {
		return nil, err
	}
	timeout := s.spec.callTimeout()
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errCallTimeout)
	defer cancel()
	if _, err := s.await(ctx); err != nil {
		return nil, err
	}
	if err := s.gate.acquire(ctx); err != nil {
		if errors.Is(err, ErrBusy) {
			return nil, fmt.Errorf("upstream %q is busy: %d calls in flight and %d waiting (max_concurrent_calls, max_queued_calls); try again later: %w", name, cap(s.gate.slots), s.gate.maxWaiting, ErrBusy)
		}
		return nil, s.callError(ctx, nil, params.Name, timeout, err)
	}
	defer s.gate.release()
	sess, err := s.await(ctx)
	if err != nil {
		return nil, err
	}
	var raw json.RawMessage
	err = sess.callTool(ctx, &raw, params)
	if errors.Is(err, transport.ErrSessionTerminated) && ctx.Err() == nil && s.ctx.Err() == nil {
		// The upstream answered 404 for the session: it did not run the
		// call. Send it again, once, on the session that replaces it.
		sess.markLost(fmt.Errorf("%w: %w", errSessionExpired, err))
		if sess, err = s.await(ctx); err != nil {
			return nil, err
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
	case errors.Is(err, ErrResultTooLarge) || strings.Contains(err.Error(), tooLargeMarker):
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

// A gate bounds the calls in flight to one upstream, with a bounded queue.
type gate struct {
	slots      chan struct{}
	waiting    atomic.Int64
	maxWaiting int64
}

func newGate(slots, queue int) *gate {
	return &gate{slots: make(chan struct{}, slots), maxWaiting: int64(queue)}
}

// acquire takes a slot, waiting in the queue if there is room in it; it
// fails with ErrBusy when there is not, or with ctx's error.
func (g *gate) acquire(ctx context.Context) error {
	select {
	case g.slots <- struct{}{}:
		return nil
	default:
	}
	if g.waiting.Add(1) > g.maxWaiting {
		g.waiting.Add(-1)
		return ErrBusy
	}
	defer g.waiting.Add(-1)
	select {
	case g.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gate) release() { <-g.slots }

// Close stops every supervisor, ends every session and stops every stdio
// server's process group, concurrently, those added by Reconcile too, and
// returns when all of it has ended. Calls after Close fail with
// ErrUnavailable. It is idempotent.
func (p *Pool) Close() error {
	p.closeOnce.Do(func() {
		p.cancel() // first: a Reconcile under way ends its attempts at once
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		p.wg.Wait()
		p.spawn.Close() // every child is stopped
	})
	servers := *p.servers.Load()
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		s := servers[name]
		s.mu.Lock()
		s.closed = true
		if s.stopError != nil {
			errs = append(errs, fmt.Errorf("closing upstream %q: %w", name, s.stopError))
		}
		s.mu.Unlock()
	}
	return errors.Join(errs...)
}

// isShutdownNoise reports errors that only say the child was stopped.
func isShutdownNoise(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "signal: terminated") || strings.Contains(msg, "signal: killed") || strings.Contains(msg, "file already closed")
}
