// Package sessiontable is the HTTP listener's table of session IDs: it
// issues them (as mcp-go's SessionIdManager), remembers the live ones and
// who owns each, counts them under the caps of Limits, evicting the least
// recently used idle session at a cap, and tells the reaper which have
// been idle too long. It keeps no session state beyond that; proxy ends
// what a session held.
package sessiontable

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/telemetry"
)

// IDPrefix starts every session ID the HTTP listener issues.
const IDPrefix = "mcp-session-"

// Defaults of Limits. A session costs about 20 KB while it lives
// (mcp-go's stores, its grants, the proxy's tables), so the default caps
// bound abandoned sessions to about 20 MB.
const (
	DefaultSessionIdleTimeout      = 30 * time.Minute
	DefaultMaxSessions             = 1000
	DefaultMaxSessionsPerPrincipal = 100
)

// Limits bound the HTTP listener's sessions. The zero value of each
// field means its default.
type Limits struct {
	// IdleTimeout ends a session that has had no request in progress for
	// this long (config http.session_idle_timeout); 0 means
	// DefaultSessionIdleTimeout. A request in progress, an open GET stream
	// included, keeps its session alive however long it takes.
	IdleTimeout time.Duration
	// Max caps the live sessions of all principals together (config
	// http.max_sessions); 0 means DefaultMaxSessions. At a cap a new
	// session evicts the least recently used idle one (see Reserve).
	Max int
	// MaxPerPrincipal caps the live sessions of one principal (config
	// http.max_sessions_per_principal); 0 means
	// DefaultMaxSessionsPerPrincipal.
	MaxPerPrincipal int
}

func (l Limits) withDefaults() Limits {
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = DefaultSessionIdleTimeout
	}
	if l.Max <= 0 {
		l.Max = DefaultMaxSessions
	}
	if l.MaxPerPrincipal <= 0 {
		l.MaxPerPrincipal = DefaultMaxSessionsPerPrincipal
	}
	return l
}

// ErrUnknownSession is what Validate returns for an ID that was never
// issued or was already terminated; mcp-go answers it with 404, so the
// client knows to initialize again (MCP streamable HTTP, session management).
var ErrUnknownSession = errors.New("unknown or terminated session")

// A LimitError refuses a new session over one of the caps of
// Limits; Status is the HTTP status it is answered with (429 for a
// principal's cap, 503 for the overall one).
type LimitError struct {
	Setting     string // the config key of the cap
	Limit       int
	Principal   string // whose cap, for the per-principal one
	IdleTimeout time.Duration
	Status      int
}

func (e *LimitError) Error() string {
	who := "mcpwarden has"
	if e.Principal != "" {
		who = fmt.Sprintf("principal %q has", e.Principal)
	}
	return fmt.Sprintf("%s %d live sessions, the most %s allows, and every one has a request in progress, so none could be ended to make room; end one with DELETE, wait for a request to finish, or raise %s",
		who, e.Limit, e.Setting, e.Setting)
}

// A liveSession is the listener's record of one issued session ID.
type liveSession struct {
	owner     string // the principal that opened it, once owned
	owned     bool
	busy      int       // requests on it in progress
	idleSince time.Time // when it was issued or its last request ended
	// record is the shared record of a session another replica opened
	// (see Adopt), from which each request's session is rebuilt; nil for
	// one this replica opened, which mcp-go keeps registered.
	record *state.Session
}

// A Reservation holds a place under the caps for a request that may open
// a session, until the session it opens is claimed or the request ends.
type Reservation struct {
	principal string
	done      bool
}

// A Table issues session IDs and remembers the live ones, so that a
// request with an ID that was never issued, or whose session a DELETE or
// the idle timeout ended, gets 404. (mcp-go's default manager only checks
// an ID's format; its stateful one keeps every terminated ID forever.) IDs
// are 128 random bits from crypto/rand: unguessable, since grants are
// bound to them. It also counts the sessions each principal holds, for the
// caps, and when each went idle, for the reaper. It is safe for concurrent
// use.
type Table struct {
	limits Limits

	mu   sync.Mutex
	live map[string]*liveSession
	// held counts, per principal, its owned live sessions and its
	// reservations; reserved counts every reservation.
	held     map[string]int
	reserved int
}

var _ server.SessionIdManager = (*Table)(nil)

// New returns an empty table under limits (their zero fields meaning the
// defaults).
func New(limits Limits) *Table {
	return &Table{limits: limits.withDefaults(), live: make(map[string]*liveSession), held: make(map[string]int)}
}

// Limits returns the table's limits, defaults filled in.
func (m *Table) Limits() Limits { return m.limits }

// Generate issues a new session ID and marks it live.
func (m *Table) Generate() string {
	id := IDPrefix + rand.Text()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.live[id] = &liveSession{idleSince: time.Now()}
	return id
}

// Validate reports an error for an ID that is not live.
func (m *Table) Validate(id string) (isTerminated bool, err error) {
	if !strings.HasPrefix(id, IDPrefix) {
		return false, ErrUnknownSession
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.live[id]; !ok {
		return false, ErrUnknownSession
	}
	return false, nil
}

// Terminate forgets id; terminating an unknown ID is not an error.
func (m *Table) Terminate(id string) (isNotAllowed bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.removeLocked(id)
	return false, nil
}

func (m *Table) removeLocked(id string) {
	ls, ok := m.live[id]
	if !ok {
		return
	}
	delete(m.live, id)
	if ls.owned {
		m.dropHeldLocked(ls.owner)
	}
}

func (m *Table) dropHeldLocked(principal string) {
	if m.held[principal]--; m.held[principal] <= 0 {
		delete(m.held, principal)
	}
}

// An Eviction is an idle session Reserve ended to make room under a cap.
type Eviction struct {
	ID    string
	Owner string
	Cap   telemetry.SessionCap
}

// Reserve holds a place for a session principal may open, or says which
// cap refuses it. Sessions issued but not yet claimed count against the
// overall cap too. At a cap it ends the least recently used idle session
// (no request in progress, a GET stream or a call waiting on an ask
// included) that counts against it — the principal's own for its cap, any
// for the overall one — and returns it, for the caller to end everywhere;
// it refuses only when every session under the cap is busy. An evicted
// ID gets 404 from now on, and its client initializes again.
func (m *Table) Reserve(principal string) (*Reservation, []Eviction, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var evicted []Eviction
	freed := 0
	if m.held[principal] >= m.limits.MaxPerPrincipal {
		id, ok := m.lruIdleLocked(principal, true, "")
		if !ok {
			return nil, nil, &LimitError{Setting: "http.max_sessions_per_principal", Limit: m.limits.MaxPerPrincipal, Principal: principal, IdleTimeout: m.limits.IdleTimeout, Status: http.StatusTooManyRequests}
		}
		evicted = append(evicted, Eviction{ID: id, Owner: principal, Cap: telemetry.CapPrincipal})
		freed = 1
	}
	if len(m.live)-freed+m.reserved >= m.limits.Max {
		skip := ""
		if len(evicted) > 0 {
			skip = evicted[0].ID
		}
		id, ok := m.lruIdleLocked("", false, skip)
		if !ok {
			return nil, nil, &LimitError{Setting: "http.max_sessions", Limit: m.limits.Max, IdleTimeout: m.limits.IdleTimeout, Status: http.StatusServiceUnavailable}
		}
		evicted = append(evicted, Eviction{ID: id, Owner: m.live[id].owner, Cap: telemetry.CapGlobal})
	}
	for _, ev := range evicted {
		m.removeLocked(ev.ID)
	}
	m.held[principal]++
	m.reserved++
	return &Reservation{principal: principal}, evicted, nil
}

// lruIdleLocked finds the owned session idle for longest other than
// skip, of principal when mine is set, of anyone otherwise.
func (m *Table) lruIdleLocked(principal string, mine bool, skip string) (string, bool) {
	var best string
	var since time.Time
	for id, ls := range m.live {
		if !ls.owned || ls.busy > 0 || (mine && ls.owner != principal) || id == skip {
			continue
		}
		if best == "" || ls.idleSince.Before(since) {
			best, since = id, ls.idleSince
		}
	}
	return best, best != ""
}

// Release gives back a reservation that claimed no session; releasing
// one already claimed or released does nothing.
func (m *Table) Release(r *Reservation) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r.done {
		return
	}
	r.done = true
	m.reserved--
	m.dropHeldLocked(r.principal)
}

// Claim makes the reservation's principal the owner of a live session
// that has none, turning the reservation into the session, and reports
// whether it did: for an ID that is not live or already owned, or a
// reservation already used, it does nothing.
func (m *Table) Claim(id string, r *Reservation) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	ls, live := m.live[id]
	if !live || ls.owned || r.done {
		return false
	}
	ls.owner, ls.owned = r.principal, true
	ls.idleSince = time.Now() // its idle time starts as its ID is sent
	r.done = true
	m.reserved-- // the principal's count now stands for the session
	return true
}

// Begin marks a request of principal on session id as in progress, if
// the session is live and principal owns it; live and owned say which.
// A request that began must end.
func (m *Table) Begin(id, principal string) (live, owned bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ls, live := m.live[id]
	if !live || !ls.owned || ls.owner != principal {
		return live, false
	}
	ls.busy++
	return true, true
}

// End marks a request that began as over; the session is idle from now
// if it was the last.
func (m *Table) End(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ls, ok := m.live[id]; ok {
		if ls.busy--; ls.busy == 0 {
			ls.idleSince = time.Now()
		}
	}
}

// Expire removes and returns the sessions idle since before now minus the
// idle timeout. A request naming one of them from now on gets 404.
func (m *Table) Expire(now time.Time) []string {
	cutoff := now.Add(-m.limits.IdleTimeout)
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for id, ls := range m.live {
		if ls.busy == 0 && !ls.idleSince.After(cutoff) {
			out = append(out, id)
		}
	}
	for _, id := range out {
		m.removeLocked(id)
	}
	return out
}

// Counts reports the live sessions, the principals holding any and the
// reservations, for tests and logs.
func (m *Table) Counts() (live, principals, reserved int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.live), len(m.held), m.reserved
}

// Adopt makes a session another replica opened live here, owned by the
// principal its shared record names, and reports whether it did: a
// session live here already is left as it is. The principal's count here
// grows with it, so the caps bound what this replica holds.
func (m *Table) Adopt(rec state.Session) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.live[rec.ID]; ok {
		return false
	}
	m.live[rec.ID] = &liveSession{owner: rec.Principal, owned: true, idleSince: time.Now(), record: &rec}
	m.held[rec.Principal]++
	return true
}

// Known reports whether session id is live here.
func (m *Table) Known(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.live[id]
	return ok
}

// Record returns the shared record of an adopted session, or nil.
func (m *Table) Record(id string) *state.Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ls, ok := m.live[id]; ok {
		return ls.record
	}
	return nil
}

// BusyIDs returns the live sessions with a request in progress.
func (m *Table) BusyIDs() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for id, ls := range m.live {
		if ls.busy > 0 {
			out = append(out, id)
		}
	}
	return out
}
