package proxy

import (
	"slices"
	"strings"
	"sync"

	"github.com/mcpwarden/mcpwarden/rules"
)

// An answer is what the human said to an ask.
type answer uint8

const (
	answerNone         answer = iota // no answer (yet)
	answerAllowOnce                  // forward this call only
	answerAllowSession               // forward this call and, for the session, the calls with the same paths (or, for a call without paths, any call of the tool without paths)
	answerAllowFolder                // forward this call and, for the session, the calls whose paths are all under the same folders
	answerDeny                       // refuse this call only
	answerDenySession                // refuse this call and every call of the tool for the session
)

// The values of the approval form's decision field.
var answerValues = map[string]answer{
	"allow_once":           answerAllowOnce,
	"allow_session":        answerAllowSession,
	"allow_session_folder": answerAllowFolder,
	"deny":                 answerDeny,
	"deny_session":         answerDenySession,
}

// A grantKey is what a session grant is bound to, besides its session: the
// principal, the tool and the ask rule that asked (docs/design.md, "Asking a human").
type grantKey struct {
	principal string
	tool      string // canonical name
	rule      string
}

// A target is a call as grants see it: whether it has path-like values,
// and every form of each (pathForms).
type target struct {
	// pathless is set when the call has no path-like key at all.
	pathless bool
	// earns is set when a session grant may be given for the call: it is
	// pathless, or every path-like value is a string (or a non-empty array
	// of strings) whose location is known.
	earns bool
	// paths are the path-like values, absolute and clean (lexical).
	paths []string
	// forms are every form of every path: the lexical ones and, for a
	// server on this machine, the physical ones (symlinks followed).
	forms []string
	// folders are the folders a folder-wide grant would cover: each path
	// itself when it is a directory, else the folder it is in.
	folders []string
	// endpoint is, for a connection (mcp:<server>:network/connect), the
	// host and port it goes to ("api.github.com:443"): its session grant
	// covers exactly that endpoint, never another host. Such a target is
	// not pathless, so no grant of the whole tool covers it.
	endpoint string
}

// A scopeKind says which calls a session grant covers.
type scopeKind uint8

const (
	scopeNothing  scopeKind = iota // no later call (the zero value fails closed)
	scopeTool                      // any call of the tool without path-like values
	scopeExact                     // calls whose every path form is one of paths
	scopeUnder                     // calls whose every path form is within one of paths
	scopeAll                       // every call of the tool (session denies only)
	scopeEndpoint                  // connections to exactly the endpoint in paths
)

// A scope is the set of later calls a session grant covers.
type scope struct {
	kind  scopeKind
	paths []string
}

// scopeFor is the scope of the session grant ans gives for t. A call that
// earns no session grant gets scopeNothing, whatever was answered.
func scopeFor(t target, ans answer) scope {
	switch {
	case ans == answerDenySession:
		return scope{kind: scopeAll}
	case !t.earns:
		return scope{}
	case t.endpoint != "" && ans == answerAllowSession:
		return scope{kind: scopeEndpoint, paths: []string{t.endpoint}}
	case t.endpoint != "":
		return scope{}
	case t.pathless && ans == answerAllowSession:
		return scope{kind: scopeTool}
	case t.pathless:
		return scope{}
	case ans == answerAllowSession:
		return scope{kind: scopeExact, paths: t.forms}
	case ans == answerAllowFolder:
		return scope{kind: scopeUnder, paths: t.folders}
	}
	return scope{}
}

// covers reports whether a later call t is inside the scope. A pathless
// scope covers only pathless calls; a path scope covers a call only if
// every form of every path is inside it.
func (s scope) covers(t target) bool {
	switch s.kind {
	case scopeAll:
		return true
	case scopeTool:
		return t.pathless
	case scopeEndpoint:
		return t.endpoint != "" && slices.Contains(s.paths, t.endpoint)
	case scopeExact, scopeUnder:
		if t.pathless || !t.earns || len(t.forms) == 0 {
			return false
		}
		for _, f := range t.forms {
			if s.kind == scopeExact && !slices.Contains(s.paths, f) || s.kind == scopeUnder && !withinAny(f, s.paths) {
				return false
			}
		}
		return true
	}
	return false
}

// String says what the scope covers, for the audit reason.
func (s scope) String() string {
	switch s.kind {
	case scopeTool:
		return "this tool, calls without paths"
	case scopeExact:
		return "exactly " + strings.Join(s.paths, ", ")
	case scopeUnder:
		return "under " + strings.Join(s.paths, ", ")
	case scopeAll:
		return "every call of this tool"
	case scopeEndpoint:
		return "connections to " + strings.Join(s.paths, ", ")
	}
	return "this call only"
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
	key  grantKey
	t    target
	done chan answer // buffered, receives at most one answer
}

// A session holds the asks of one client session waiting for the human,
// for a session grant given meanwhile to resolve the ones it covers. The
// grants themselves are kept in the state store (see grants_shared.go).
type session struct {
	mu      sync.Mutex
	waiters map[*waiter]struct{}
}

// wake resolves the waiting asks that a session-wide answer, just given
// with scope sc, covers.
func (s *session) wake(key grantKey, a answer, sc scope) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.waiters {
		if w.key == key && sc.covers(w.t) {
			select {
			case w.done <- a:
			default:
			}
		}
	}
}

func (s *session) wait(key grantKey, t target) *waiter {
	w := &waiter{key: key, t: t, done: make(chan answer, 1)}
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

// A grantStore holds every live session's waiting asks.
type grantStore struct {
	mu       sync.Mutex
	sessions map[string]*session
}

// session returns the waiting asks of session id, creating them. A call
// without a session id gets a fresh, unshared session: nothing it grants
// outlives it.
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

// end forgets a session's waiting asks.
func (g *grantStore) end(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.sessions, id)
}
