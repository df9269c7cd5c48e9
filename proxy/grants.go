package proxy

import (
	"sync"

	"github.com/mcpwarden/mcpwarden/rules"
)

// An answer is what the human said to an ask.
type answer uint8

const (
	answerNone         answer = iota // no answer (yet)
	answerAllowOnce                  // forward this call only
	answerAllowSession               // forward this and covered later calls in the session
	answerDeny                       // refuse this call only
	answerDenySession                // refuse this and covered later calls in the session
)

// The values of the approval form's decision field.
var answerValues = map[string]answer{
	"allow_once":    answerAllowOnce,
	"allow_session": answerAllowSession,
	"deny":          answerDeny,
	"deny_session":  answerDenySession,
}

// A grantKey is what a session grant is bound to: the tool and the ask rule
// that asked (DESIGN.md §3).
type grantKey struct {
	tool string // canonical name
	rule string
}

// A scope is the set of calls a session grant covers: every call of its key
// when all is set, else the calls whose path-like arguments are all within
// one of paths (a grant for a path covers the paths beneath it).
type scope struct {
	all   bool
	paths []string
}

// scopeOf is the scope a grant given for a call with these paths covers. A
// call whose paths are not all known gives an empty scope: the grant allows
// that call and nothing later.
func scopeOf(paths []string, known bool) scope {
	switch {
	case !known:
		return scope{}
	case len(paths) == 0:
		return scope{all: true}
	default:
		return scope{paths: paths}
	}
}

func (s scope) covers(paths []string, known bool) bool {
	if s.all {
		return true
	}
	if !known || len(paths) == 0 || len(s.paths) == 0 {
		return false
	}
	for _, p := range paths {
		if !withinAny(p, s.paths) {
			return false
		}
	}
	return true
}

func withinAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if rules.Within(p, d) {
			return true
		}
	}
	return false
}

// A waiter is an ask waiting for the human; a session grant that covers it
// resolves it.
type waiter struct {
	key   grantKey
	paths []string
	known bool
	done  chan answer // buffered, receives at most one answer
}

// A session holds the grants one client session has given. Grants live in
// memory and die with the session.
type session struct {
	mu      sync.Mutex
	allow   map[grantKey][]scope
	deny    map[grantKey][]scope
	waiters map[*waiter]struct{}
}

// standing returns the session's standing answer for a call, if any. A
// session deny wins over a session allow.
func (s *session) standing(key grantKey, paths []string, known bool) answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sc := range s.deny[key] {
		if sc.covers(paths, known) {
			return answerDenySession
		}
	}
	for _, sc := range s.allow[key] {
		if sc.covers(paths, known) {
			return answerAllowSession
		}
	}
	return answerNone
}

// remember records a session-wide answer and resolves the waiting asks it
// covers.
func (s *session) remember(key grantKey, a answer, sc scope) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := &s.allow
	if a == answerDenySession {
		m = &s.deny
	}
	if *m == nil {
		*m = map[grantKey][]scope{}
	}
	(*m)[key] = append((*m)[key], sc)
	for w := range s.waiters {
		if w.key == key && sc.covers(w.paths, w.known) {
			select {
			case w.done <- a:
			default:
			}
		}
	}
}

func (s *session) wait(key grantKey, paths []string, known bool) *waiter {
	w := &waiter{key: key, paths: paths, known: known, done: make(chan answer, 1)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiters == nil {
		s.waiters = map[*waiter]struct{}{}
	}
	s.waiters[w] = struct{}{}
	return w
}

func (s *session) unwait(w *waiter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.waiters, w)
}

// A grantStore holds every live session's grants.
type grantStore struct {
	mu       sync.Mutex
	sessions map[string]*session
}

// session returns the grants of session id, creating them. A call without
// a session id gets a fresh, unshared session: nothing it grants outlives it.
func (g *grantStore) session(id string) *session {
	if id == "" {
		return &session{}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sessions == nil {
		g.sessions = map[string]*session{}
	}
	s, ok := g.sessions[id]
	if !ok {
		s = &session{}
		g.sessions[id] = s
	}
	return s
}

// end forgets a session's grants.
func (g *grantStore) end(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.sessions, id)
}
