package upstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
)

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
	logger  *slog.Logger
	env     *supervisorEnv // what its supervisors share with it

	ctx       context.Context // ended by Close
	cancel    context.CancelFunc
	closeOnce sync.Once

	// mu is held only briefly, never across an upstream call or a stop: it
	// orders the replacing of servers, the starting of supervisors
	// (env.group.Add) and Close. Supervisors never take it.
	mu       sync.Mutex
	closed   bool               // by Close; no supervisor starts after it
	retiring map[string]*server // stopped by Reconcile, until Reconcile sees their supervisor ended
}

// Start builds a pool of the servers in specs and starts it (see New and
// (*Pool).Start), without a peer: for callers that only list and call.
func Start(ctx context.Context, specs map[string]Spec, opts *Options) *Pool {
	p := New(specs, opts)
	p.Start(ctx, nil)
	return p
}

// New builds a pool of the servers in specs without starting any of them,
// so that the client side (the peer, the receiver of Options.OnEvent) can
// be built on the pool before the first server is heard from.
func New(specs map[string]Spec, opts *Options) *Pool {
	if opts == nil {
		opts = &Options{}
	}
	env := newSupervisorEnv(*opts)
	p := &Pool{logger: env.opts.Logger, env: env, retiring: map[string]*server{}}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	servers := make(map[string]*server, len(specs))
	for name, spec := range specs {
		servers[name] = newServer(p.ctx, env, name, spec)
	}
	p.servers.Store(&servers)
	return p
}

// Start connects to every server given to New concurrently: it starts or
// dials it, initializes the session and lists all its tools (following
// pagination). peer, when not nil, gets the upstreams' notifications and
// answers their requests to the client side (see Peer). Start returns
// when each server has succeeded or failed its first attempt, or at once
// with Options.Background; a failure is kept on its server (see Err) and
// does not stop the others, and the server is retried in the background.
// ctx bounds the first attempts only: the sessions live until Close.
// Start is called once, before any other method but Names and Close.
func (p *Pool) Start(ctx context.Context, peer Peer) {
	p.env.client = peer
	var first sync.WaitGroup
	for _, s := range *p.servers.Load() {
		s.start(ctx, &first) // nothing else runs on p yet
	}
	if !p.env.opts.Background {
		first.Wait()
	}
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
	return s.currentTools()
}

// Protocol returns the protocol version the server's current session
// speaks: 2026-07-28 or later for a server mcpwarden reached with
// server/discover, an earlier one for a server of the initialize
// handshake. It is "" while the server is down.
func (p *Pool) Protocol(name string) string {
	s, err := p.server(name)
	if err != nil {
		return ""
	}
	sess, err := s.current()
	if err != nil {
		return ""
	}
	return sess.protocol
}

// PID returns the process id of the stdio server name's current process,
// which serves its calls, so that a path the server is given, such as
// /proc/self/cwd/x, can be read as that process reads it. ok is false for
// a remote server, one that is down, and one whose calls isolated children
// serve (which of them serves a call is not known before it is routed).
func (p *Pool) PID(name string) (pid int, ok bool) {
	s, err := p.server(name)
	if err != nil || s.kids != nil {
		return 0, false
	}
	sess, err := s.current()
	if err != nil || sess.proc == nil || sess.proc.cmd.Process == nil {
		return 0, false
	}
	return sess.proc.pid, true
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
		p.env.group.Wait()
		p.env.spawn.Close() // every child is stopped
	})
	servers := *p.servers.Load()
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		if err := servers[name].markClosed(); err != nil {
			errs = append(errs, fmt.Errorf("closing upstream %q: %w", name, err))
		}
	}
	return errors.Join(errs...)
}
