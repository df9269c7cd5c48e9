package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
