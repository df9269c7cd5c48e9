package upstream

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// An Isolation says which callers share a stdio server's child process.
type Isolation uint8

// Isolations. The zero value is IsolationShared: one child for everyone.
const (
	IsolationShared Isolation = iota
	IsolationPerPrincipal
	IsolationPerSession
)

func (i Isolation) String() string {
	switch i {
	case IsolationShared:
		return "shared"
	case IsolationPerPrincipal:
		return "per_principal"
	case IsolationPerSession:
		return "per_session"
	default:
		return "unknown"
	}
}

// ErrIsolationFull is wrapped by the error of a call that needs a new
// isolated child while isolation_max of them are running already.
var ErrIsolationFull = errors.New("isolation_max reached")

// A Route says who a tools/call comes from, so that a server isolated per
// principal or per session is given its caller's child. Call records in
// Instance which isolated child served the call ("" when the server is
// shared).
type Route struct {
	Principal string
	Session   string
	Instance  string // set by Call
}

type routeKey struct{}

// WithRoute returns ctx carrying r, for Call to route by and fill in.
func WithRoute(ctx context.Context, r *Route) context.Context {
	return context.WithValue(ctx, routeKey{}, r)
}

func routeOf(ctx context.Context) *Route {
	r, _ := ctx.Value(routeKey{}).(*Route)
	return r
}

// A childKey says whose child a call goes to. Being a struct, it cannot be
// forged by a principal or session id that spells out another's key.
type childKey struct {
	principal string
	session   string // "" for a child per principal
}

// String is the child's name in logs and audit events.
func (k childKey) String() string {
	if k.session == "" {
		return "principal:" + k.principal
	}
	return "principal:" + k.principal + " session:" + k.session
}

// key is the child a call from r goes to under isolation i. A session's
// child is its principal's too: a session id sent by another principal
// does not reach it. A call without a session (a protocol without them)
// goes to its principal's child.
func (i Isolation) key(r *Route) childKey {
	if i == IsolationPerSession {
		return childKey{principal: r.Principal, session: r.Session}
	}
	return childKey{principal: r.Principal}
}

// isolated reports whether spec gives each caller a child of its own: only
// servers mcpwarden starts can be.
func (s Spec) isolated() bool {
	return s.Isolation != IsolationShared && s.Transport == TransportStdio
}

// children are the isolated children of one server, its template: the
// template lists the tools, each child serves the calls of one principal
// or session. A child is started on its first call, stopped once it has
// been idle for the spec's idle timeout, and there are at most the spec's
// max of them.
type children struct {
	mu      sync.Mutex
	byKey   map[childKey]*child
	reaping bool // the reaper runs
	started int  // children started so far, to number them
}

// A child is one isolated child server and its use.
type child struct {
	s        *server
	busy     int       // calls in flight
	lastUsed time.Time // when the last call ended
}

// pick returns the server that serves a call to s from ctx's route, and
// the function to call once the call has ended. A shared server, or a call
// without a route, is served by s itself.
func (p *Pool) pick(ctx context.Context, s *server) (*server, func(), error) {
	r := routeOf(ctx)
	if s.kids == nil || r == nil {
		return s, func() {}, nil
	}
	key := s.spec.Isolation.key(r)
	k := s.kids
	k.mu.Lock()
	if c, ok := k.byKey[key]; ok {
		c.busy++
		k.mu.Unlock()
		return c.s, k.releaser(c), nil
	}
	k.mu.Unlock()

	p.mu.Lock() // no child starts after Close
	defer p.mu.Unlock()
	if p.closed || s.ctx.Err() != nil {
		return s, func() {}, nil // fails saying the server is closed or removed
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if c, ok := k.byKey[key]; ok { // started meanwhile
		c.busy++
		return c.s, k.releaser(c), nil
	}
	if limit := s.spec.isolationMax(); len(k.byKey) >= limit {
		return nil, nil, fmt.Errorf("upstream %q: %d isolated children (%s) are running, the most isolation_max allows; one is stopped after isolation_idle_timeout (%s) unused: %w",
			s.name, len(k.byKey), s.spec.Isolation, s.spec.isolationIdleTimeout(), ErrIsolationFull)
	}
	k.started++
	cs := newServer(s.ctx, s.env, s.name, s.spec)
	cs.kids, cs.instance = nil, key.String()+"#"+strconv.Itoa(k.started)
	cs.logger = cs.logger.With("instance", cs.instance)
	c := &child{s: cs, busy: 1}
	if k.byKey == nil {
		k.byKey = map[childKey]*child{}
	}
	k.byKey[key] = c
	var first sync.WaitGroup
	cs.start(context.WithoutCancel(ctx), &first)
	cs.logger.Info("isolated upstream child starting")
	if !k.reaping {
		k.reaping = true
		s.env.group.Go(func() { k.reap(s.ctx, s.spec.isolationIdleTimeout()) })
	}
	return cs, k.releaser(c), nil
}

// releaser returns the function that ends a call's use of c.
func (k *children) releaser(c *child) func() {
	return func() {
		k.mu.Lock()
		c.busy--
		c.lastUsed = time.Now()
		k.mu.Unlock()
	}
}

// busy reports whether a child has a call in flight; nil children have
// none.
func (k *children) busy() bool {
	if k == nil {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, c := range k.byKey {
		if c.busy > 0 {
			return true
		}
	}
	return false
}

// reap stops the children that have been idle for idle, until ctx (the
// template's) ends; the children end with it.
func (k *children) reap(ctx context.Context, idle time.Duration) {
	tick := min(max(idle/4, 10*time.Millisecond), 30*time.Second)
	for sleep(ctx, tick) {
		for _, c := range k.idle(time.Now(), idle) {
			c.s.cancel()
			<-c.s.done
			c.s.logger.Info("isolated upstream child stopped: idle", "isolation_idle_timeout", idle)
		}
	}
}

// idle removes and returns the children without a call in flight whose
// last call ended idle ago or longer.
func (k *children) idle(now time.Time, idle time.Duration) []*child {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []*child
	for key, c := range k.byKey {
		if c.busy == 0 && now.Sub(c.lastUsed) >= idle {
			delete(k.byKey, key)
			out = append(out, c)
		}
	}
	return out
}

// instanceName is what a call's Route says served it: the child's name
// and the process id of its current session.
func (s *server) instanceName(sess *session) string {
	if sess.proc == nil || sess.proc.cmd.Process == nil {
		return s.instance
	}
	return s.instance + " pid " + strconv.Itoa(sess.proc.cmd.Process.Pid)
}
