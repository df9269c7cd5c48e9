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

// A Route says who a request comes from, so that a server isolated per
// principal or per session is given its caller's child: Call and Request
// take it, route by it and record in Instance which isolated child served
// the request ("" when the server is shared). It also travels the other
// way (see CallerOf): the ctx a Peer gets with an isolated child's
// notification or request carries the Route of the caller that child
// serves, Session empty when the child serves every session of its
// principal.
type Route struct {
	Principal string
	Session   string
	Instance  string // set by Call and Request
}

// Serves reports whether a client session, of principal with the session
// id session, is one the child r came from serves: the same principal, and
// the same session unless r has none. A nil Route, of a shared server,
// serves every session.
func (r *Route) Serves(principal, session string) bool {
	if r == nil {
		return true
	}
	return principal == r.Principal && (r.Session == "" || session == r.Session)
}

type callerKey struct{}

// CallerOf is, in the ctx of a Peer's notification or request, the Route
// of the caller the isolated child that sent it serves; nil when a shared
// server sent it (whose ctx carries an explicit nil, so that no Route
// inherited from the ctx the request was made with passes for it).
func CallerOf(ctx context.Context) *Route {
	r, _ := ctx.Value(callerKey{}).(*Route)
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

// pick returns the server that serves a call to s from the caller r, and
// the function to call once the call has ended. A shared server is served
// by s itself; an isolated one refuses a call without a route.
func (p *Pool) pick(ctx context.Context, s *server, r *Route) (*server, func(), error) {
	if s.kids == nil {
		return s, func() {}, nil
	}
	if r == nil {
		// Every caller routes its requests; one that does not must not
		// reach the template, which all callers would share.
		return nil, nil, fmt.Errorf("upstream %q is isolated (%s): a request that names no caller is refused rather than sent to a shared process", s.name, s.spec.Isolation)
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
	spec, removeDirs := s.spec, func() {}
	if spec.Sandbox != nil {
		spec.Sandbox, removeDirs = spec.Sandbox.forChild(key, spec.Isolation)
	}
	cs := newServer(s.ctx, s.env, s.name, spec)
	cs.kids, cs.instance, cs.owner = nil, key.String()+"#"+strconv.Itoa(k.started), key
	if r, ok := reachOf(ctx); ok && s.spec.Isolation == IsolationPerSession {
		cs.reach = &r // its one client's, which its initialize declares
	}
	cs.logger = cs.logger.With("instance", cs.instance)
	c := &child{s: cs, busy: 1}
	if k.byKey == nil {
		k.byKey = map[childKey]*child{}
	}
	k.byKey[key] = c
	var first sync.WaitGroup
	cs.start(context.WithoutCancel(ctx), &first)
	s.env.group.Go(func() { <-cs.done; removeDirs() })
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
	return s.instance + " pid " + strconv.Itoa(sess.proc.pid)
}

// peerContext is ctx carrying, for an isolated child, the Route of the
// caller it serves (see CallerOf), so that the Peer sends its
// notifications and requests to that caller alone; for any other server,
// none, whatever ctx carried. A fresh Route each time: the Peer cannot
// change the child's.
func (s *server) peerContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, callerKey{}, s.caller())
}

// EndSession stops the children isolated per session that serve the client
// session with the id session, which has ended: a per_session child lives
// no longer than its session (isolation_idle_timeout is for sessions that
// stay open unused). It returns at once; the children are stopped in the
// background and the pool's Close waits for them. Children per principal
// are left to the idle timeout: the principal may have other sessions.
func (p *Pool) EndSession(session string) {
	if session == "" {
		return
	}
	var ended []*child
	for _, name := range p.Names() {
		s, err := p.server(name)
		if err != nil || s.kids == nil {
			continue
		}
		ended = append(ended, s.kids.endSession(session)...)
	}
	if len(ended) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return // Close stops them
	}
	p.env.group.Go(func() {
		for _, c := range ended {
			c.s.cancel()
			<-c.s.done
			c.s.logger.Info("isolated upstream child stopped: its session ended", "session", session)
		}
	})
}

// endSession removes and returns the children that serve session.
func (k *children) endSession(session string) []*child {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []*child
	for key, c := range k.byKey {
		if key.session == session {
			delete(k.byKey, key)
			out = append(out, c)
		}
	}
	return out
}
