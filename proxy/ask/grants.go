// Package ask is the vocabulary of asking a human about a call: reading
// an answer (state.Answer) off the approval form, what a session grant
// is bound to (GrantKey) and which later calls it covers (Target, Scope),
// the asks of a session waiting for a grant given meanwhile (Waiting),
// and keeping grants and pending multi round-trip asks in a state store
// (Keeper). The asker in package proxy speaks it.
package ask

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/mcpwarden/mcpwarden/internal/enumtext"
	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/rules"
)

// choices are the values of the approval form's decision field.
var choices = map[string]state.Answer{
	"allow_once":           state.AllowOnce,
	"allow_session":        state.AllowSession,
	"allow_session_folder": state.AllowFolder,
	"deny":                 state.Deny,
	"deny_session":         state.DenySession,
}

// Choice is the answer a value of the approval form's decision field
// gives; None for a value that is not one.
func Choice(value string) state.Answer {
	if a, ok := choices[value]; ok {
		return a
	}
	return state.None
}

// A GrantKey is what a session grant is bound to, besides its session: the
// principal, the tool and the ask rule that asked (docs/design.md, "Asking a human").
type GrantKey struct {
	Principal string
	Tool      string // canonical name
	Rule      string
}

// A Target is a call as grants see it: whether it has path-like values,
// and every form of each.
type Target struct {
	// Pathless is set when the call has no path-like key at all.
	Pathless bool
	// Earns is set when a session grant may be given for the call: it is
	// pathless, or every path-like value is a string (or a non-empty array
	// of strings) whose location is known.
	Earns bool
	// Paths are the path-like values, absolute and clean (lexical).
	Paths []string
	// Forms are every form of every path: the lexical ones and, for a
	// server on this machine, the physical ones (symlinks followed).
	Forms []string
	// Folders are the folders a folder-wide grant would cover: each path
	// itself when it is a directory, else the folder it is in.
	Folders []string
	// Endpoint is, for a connection (mcp:<server>:network/connect), the
	// host and port it goes to ("api.github.com:443"): its session grant
	// covers exactly that endpoint, never another host. Such a target is
	// not pathless, so no grant of the whole tool covers it.
	Endpoint string
}

// A ScopeKind says which calls a session grant covers.
type ScopeKind uint8

// The scope kinds.
const (
	ScopeNothing  ScopeKind = iota // no later call (the zero value fails closed)
	ScopeTool                      // any call of the tool without path-like values
	ScopeExact                     // calls whose every path form is one of paths
	ScopeUnder                     // calls whose every path form is within one of paths
	ScopeAll                       // every call of the tool (session denies only)
	ScopeEndpoint                  // connections to exactly the endpoint in paths
)

// A Scope is the set of later calls a session grant covers. It is kept in
// the state store as JSON ({"kind":…,"paths":[…]}).
type Scope struct {
	Kind  ScopeKind
	Paths []string
}

// ScopeFor is the scope of the session grant ans gives for t. A call that
// earns no session grant gets ScopeNothing, whatever was answered.
func ScopeFor(t Target, ans state.Answer) Scope {
	switch {
	case ans == state.DenySession:
		return Scope{Kind: ScopeAll}
	case !t.Earns:
		return Scope{}
	case t.Endpoint != "" && ans == state.AllowSession:
		return Scope{Kind: ScopeEndpoint, Paths: []string{t.Endpoint}}
	case t.Endpoint != "":
		return Scope{}
	case t.Pathless && ans == state.AllowSession:
		return Scope{Kind: ScopeTool}
	case t.Pathless:
		return Scope{}
	case ans == state.AllowSession:
		return Scope{Kind: ScopeExact, Paths: t.Forms}
	case ans == state.AllowFolder:
		return Scope{Kind: ScopeUnder, Paths: t.Folders}
	}
	return Scope{}
}

// Covers reports whether a later call t is inside the scope. A pathless
// scope covers only pathless calls; a path scope covers a call only if
// every form of every path is inside it.
func (s Scope) Covers(t Target) bool {
	switch s.Kind {
	case ScopeAll:
		return true
	case ScopeTool:
		return t.Pathless
	case ScopeEndpoint:
		return t.Endpoint != "" && slices.Contains(s.Paths, t.Endpoint)
	case ScopeExact, ScopeUnder:
		if t.Pathless || !t.Earns || len(t.Forms) == 0 {
			return false
		}
		for _, f := range t.Forms {
			if s.Kind == ScopeExact && !slices.Contains(s.Paths, f) || s.Kind == ScopeUnder && !withinAny(f, s.Paths) {
				return false
			}
		}
		return true
	}
	return false
}

// String says what the scope covers, for the audit reason.
func (s Scope) String() string {
	switch s.Kind {
	case ScopeTool:
		return "this tool, calls without paths"
	case ScopeExact:
		return "exactly " + strings.Join(s.Paths, ", ")
	case ScopeUnder:
		return "under " + strings.Join(s.Paths, ", ")
	case ScopeAll:
		return "every call of this tool"
	case ScopeEndpoint:
		return "connections to " + strings.Join(s.Paths, ", ")
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

// A Waiter is an ask waiting for the human; a session grant that covers it
// resolves it.
type Waiter struct {
	key  GrantKey
	t    Target
	done chan state.Answer // buffered, receives at most one answer
}

// Done receives the answer of a session grant given meanwhile that covers
// the ask, at most once.
func (w *Waiter) Done() <-chan state.Answer { return w.done }

// Waiting are the asks of one client session waiting for the human, for
// a session grant given meanwhile to resolve the ones it covers. The
// grants themselves are kept in the state store. The zero value is ready.
type Waiting struct {
	mu      sync.Mutex
	waiters map[*Waiter]struct{}
}

// Wake resolves the waiting asks that a session-wide answer a, just given
// with scope sc, covers.
func (s *Waiting) Wake(key GrantKey, a state.Answer, sc Scope) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.waiters {
		if w.key == key && sc.Covers(w.t) {
			select {
			case w.done <- a:
			default:
			}
		}
	}
}

// Wait adds an ask about t, bound to key, until Unwait.
func (s *Waiting) Wait(key GrantKey, t Target) *Waiter {
	w := &Waiter{key: key, t: t, done: make(chan state.Answer, 1)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiters == nil {
		s.waiters = map[*Waiter]struct{}{}
	}
	s.waiters[w] = struct{}{}
	return w
}

// Unwait removes an ask that no longer waits.
func (s *Waiting) Unwait(w *Waiter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.waiters, w)
}

// Sessions are every live session's waiting asks. The zero value is
// ready; it is safe for concurrent use.
type Sessions struct {
	mu       sync.Mutex
	sessions map[string]*Waiting
}

// Session returns the waiting asks of session id, creating them. A call
// without a session id gets a fresh, unshared Waiting: nothing it grants
// outlives it.
func (g *Sessions) Session(id string) *Waiting {
	if id == "" {
		return &Waiting{}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sessions == nil {
		g.sessions = map[string]*Waiting{}
	}
	s, ok := g.sessions[id]
	if !ok {
		s = &Waiting{}
		g.sessions[id] = s
	}
	return s
}

// End forgets a session's waiting asks.
func (g *Sessions) End(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.sessions, id)
}

// Len returns how many sessions have waiting asks kept.
func (g *Sessions) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.sessions)
}

var scopeKindNames = enumtext.Names[ScopeKind]{
	ScopeNothing: "nothing", ScopeTool: "tool", ScopeExact: "exact", ScopeUnder: "under", ScopeAll: "all",
	ScopeEndpoint: "endpoint",
}

// String returns the scope kind's name.
func (k ScopeKind) String() string { return scopeKindNames.String(k, "ScopeKind") }

// MarshalText returns the scope kind's name.
func (k ScopeKind) MarshalText() ([]byte, error) { return scopeKindNames.Marshal(k, "scope kind") }

// UnmarshalText reads a scope kind's name; anything else is an error and
// leaves ScopeNothing, which covers no call.
func (k *ScopeKind) UnmarshalText(b []byte) error {
	if !scopeKindNames.Set(k, string(b)) {
		return fmt.Errorf("unknown grant scope kind %q", b)
	}
	return nil
}

// scopeJSON is a scope as the state store keeps it.
type scopeJSON struct {
	Kind  ScopeKind `json:"kind"`
	Paths []string  `json:"paths,omitempty"`
}

// MarshalJSON writes the scope as the state store keeps it.
func (s Scope) MarshalJSON() ([]byte, error) {
	return json.Marshal(scopeJSON(s))
}

// UnmarshalJSON reads a scope the state store kept; one it cannot read is
// an error and covers nothing.
func (s *Scope) UnmarshalJSON(b []byte) error {
	var j scopeJSON
	if err := json.Unmarshal(b, &j); err != nil {
		*s = Scope{}
		return err
	}
	*s = Scope(j)
	return nil
}
