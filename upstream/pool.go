package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
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
	// ErrUnknownServer is returned for a server name the pool was not given.
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
	// EventKind), including the first connect attempts made by Start. Events
	// of one server come in order, from that server's supervisor goroutine;
	// events of different servers may come concurrently. OnEvent should
	// return quickly (the server is not restarted or re-listed meanwhile); it
	// may call the Pool's methods other than Close.
	OnEvent func(Event)
	// Peer, if set, gets the upstreams' notifications and answers their
	// requests to the client side (see Peer).
	Peer Peer
	// MinBackoff and MaxBackoff bound the delay between restart attempts;
	// 0 means DefaultMinBackoff and DefaultMaxBackoff.
	MinBackoff, MaxBackoff time.Duration
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
// holds up the others. A Pool is safe for concurrent use.
type Pool struct {
	servers map[string]*server // fixed at Start
	info    mcp.Implementation
	logger  *slog.Logger
	opts    Options

	ctx       context.Context // ended by Close
	cancel    context.CancelFunc
	wg        sync.WaitGroup // the supervisors
	closeOnce sync.Once
}

// A server is one upstream and its supervisor's view of it.
type server struct {
	name   string
	spec   Spec
	pool   *Pool
	logger *slog.Logger
	gate   *gate

	relist  chan struct{} // tools/list_changed arrived; capacity 1
	suspect chan struct{} // a call failed in the transport; capacity 1

	mu        sync.Mutex
	sess      *session // nil while down
	tools     []mcp.Tool
	everUp    bool
	lastErr   error     // why it is down
	attempt   int       // the number of the next (or current) attempt
	retryAt   time.Time // when it is due; zero while it is in progress
	closed    bool
	stopError error // from closing the last session at Close
}

// Start connects to every server in specs concurrently: it starts or dials
// it, initializes the session and lists all its tools (following
// pagination). It returns when each has succeeded or failed its first
// attempt; a failure is kept on its server (see Err) and does not stop the
// others, and the server is retried in the background. ctx bounds the
// first attempts only: the sessions live until Close.
func Start(ctx context.Context, specs map[string]Spec, opts *Options) *Pool {
	if opts == nil {
		opts = &Options{}
	}
	p := &Pool{servers: make(map[string]*server, len(specs)), opts: *opts, logger: opts.Logger, info: opts.ClientInfo}
	if p.logger == nil {
		p.logger = slog.New(slog.DiscardHandler)
	}
	if p.info.Name == "" {
		p.info = mcp.Implementation{Name: "mcpwarden", Version: "dev"}
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	var first sync.WaitGroup
	for name, spec := range specs {
		s := &server{
			name:    name,
			spec:    spec,
			pool:    p,
			logger:  p.logger.With("server", name),
			gate:    newGate(spec.maxConcurrentCalls(), spec.maxQueuedCalls()),
			relist:  make(chan struct{}, 1),
			suspect: make(chan struct{}, 1),
			attempt: 1,
		}
		p.servers[name] = s
		first.Add(1)
		p.wg.Go(func() { s.run(ctx, first.Done) })
	}
	first.Wait()
	return p
}

// run is the server's supervisor: it (re)starts the server until the pool
// is closed. startDone is called once the first attempt has ended.
func (s *server) run(startCtx context.Context, startDone func()) {
	ctx := s.pool.ctx
	defer func() {
		if startDone != nil {
			startDone()
		}
	}()
	failures := 0
	for {
		dialCtx, cancel := context.WithCancel(ctx)
		stop := func() bool { return false }
		if startDone != nil { // the first attempt is bounded by Start's ctx too
			stop = context.AfterFunc(startCtx, cancel)
		}
		sess, err := dial(dialCtx, s.spec, s.pool.info, s.logger, s.onNotification, s.clientOptions()...)
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
		s.logger.Info("upstream ready", "transport", s.spec.Transport, "upstream", sess.info.Name, "version", sess.info.Version, "tools", len(sess.tools), "event", ev.Kind)
		s.emit(ev)
		if startDone != nil {
			startDone()
			startDone = nil
		}

		s.watch(ctx, sess)
		if ctx.Err() != nil {
			s.setStopError(sess.stop())
			return
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
	return ev
}

// setDown records that the server is down because of err, with attempt
// due after delay, and returns the event to report (without Kind).
func (s *server) setDown(err error, attempt int, delay time.Duration) Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sess, s.lastErr, s.attempt, s.retryAt = nil, err, attempt, time.Now().Add(delay)
	return Event{Server: s.name, Err: s.unavailableLocked(), Attempt: s.attempt, RetryIn: delay}
}

// setConnecting records that an attempt is in progress.
func (s *server) setConnecting() {
	s.mu.Lock()
	s.retryAt = time.Time{}
	s.mu.Unlock()
}

func (s *server) setStopError(err error) {
	s.mu.Lock()
	s.closed = true
	if err != nil && !isShutdownNoise(err) {
		s.stopError = err
	}
	s.sess = nil
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
	e := &UnavailableError{Server: s.name, Attempt: s.attempt, EverUp: s.everUp, Err: s.lastErr, Closed: s.closed}
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
	Err     error         // why the last attempt failed or the session ended
}

func (e *UnavailableError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "upstream %q ", e.Server)
	switch {
	case e.Closed:
		b.WriteString("is closed")
	case e.EverUp:
		b.WriteString("is restarting")
	default:
		b.WriteString("is not available")
	}
	if !e.Closed {
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
	return slices.Sorted(maps.Keys(p.servers))
}

// Err is nil when the server is up and can take calls, an error wrapping
// ErrUnavailable (an *UnavailableError) when it is not right now, or
// ErrUnknownServer.
func (p *Pool) Err(name string) error {
	s, ok := p.servers[name]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownServer, name)
	}
	_, err := s.current()
	return err
}

// Tools returns the server's current tools: those it listed when it last
// (re)started or after its last tools/list_changed, and Err(name). While
// it is down, they are the tools it had when it was last up (nil if it
// never was). The slice is shared: do not modify it.
func (p *Pool) Tools(name string) ([]mcp.Tool, error) {
	s, ok := p.servers[name]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownServer, name)
	}
	_, err := s.current()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools, err
}

// errCallTimeout is the cause of a call's context when CallTimeout ends it.
var errCallTimeout = errors.New("call_timeout expired")

// Call forwards a tools/call to the server, with params as given (the
// upstream tool name, the arguments and _meta), and returns its result. It
// fails fast with ErrUnavailable while the server is down and with ErrBusy
// when its queue is full; it waits at most the server's CallTimeout
// (ErrTimeout) and refuses a result over its MaxResultBytes
// (ErrResultTooLarge). A call interrupted by the upstream going down fails
// and is not retried: it may have had effects.
func (p *Pool) Call(ctx context.Context, name string, params mcp.CallToolParams) (*mcp.CallToolResult, error) {
	s, ok := p.servers[name]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownServer, name)
	}
	if _, err := s.current(); err != nil {
		return nil, err
	}
	timeout := s.spec.callTimeout()
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errCallTimeout)
	defer cancel()
	if err := s.gate.acquire(ctx); err != nil {
		if errors.Is(err, ErrBusy) {
			return nil, fmt.Errorf("upstream %q is busy: %d calls in flight and %d waiting (max_concurrent_calls, max_queued_calls); try again later: %w", name, cap(s.gate.slots), s.gate.maxWaiting, ErrBusy)
		}
		return nil, s.callError(ctx, nil, params.Name, timeout, err)
	}
	defer s.gate.release()
	sess, err := s.current()
	if err != nil {
		return nil, err
	}
	res, err := sess.client.CallTool(ctx, mcp.CallToolRequest{Params: params})
	if err != nil {
		return nil, s.callError(ctx, sess, params.Name, timeout, err)
	}
	return res, nil
}

// callError explains why a call to tool failed with err, and tells the
// supervisor when the failure says the session is gone.
func (s *server) callError(ctx context.Context, sess *session, tool string, timeout time.Duration, err error) error {
	switch {
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
// server's process group, concurrently, and returns when all of it has
// ended. Calls after Close fail with ErrUnavailable. It is idempotent.
func (p *Pool) Close() error {
	p.closeOnce.Do(func() {
		p.cancel()
		p.wg.Wait()
	})
	var errs []error
	for _, name := range p.Names() {
		s := p.servers[name]
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
