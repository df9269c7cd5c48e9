package proxy

import (
	"crypto/rand"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/server"
)

// sessionIDPrefix starts every session ID the HTTP listener issues.
const sessionIDPrefix = "mcp-session-"

// errUnknownSession is what Validate returns for an ID that was never
// issued or was already terminated; mcp-go answers it with 404, so the
// client knows to initialize again (MCP streamable HTTP, session management).
var errUnknownSession = errors.New("unknown or terminated session")

// sessionIDs issues session IDs and remembers the live ones, so that a
// request with an ID that was never issued, or whose session a DELETE
// ended, gets 404. (mcp-go's default manager only checks an ID's format;
// its stateful one keeps every terminated ID forever.) IDs are 128 random
// bits from crypto/rand: unguessable, since grants are bound to them. It
// is safe for concurrent use.
type sessionIDs struct {
	mu   sync.Mutex
	live map[string]struct{}
}

var _ server.SessionIdManager = (*sessionIDs)(nil)

func newSessionIDs() *sessionIDs { return &sessionIDs{live: make(map[string]struct{})} }

// Generate issues a new session ID and marks it live.
func (m *sessionIDs) Generate() string {
	id := sessionIDPrefix + rand.Text()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.live[id] = struct{}{}
	return id
}

// Validate reports an error for an ID that is not live.
func (m *sessionIDs) Validate(id string) (isTerminated bool, err error) {
	if !strings.HasPrefix(id, sessionIDPrefix) {
		return false, errUnknownSession
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.live[id]; !ok {
		return false, errUnknownSession
	}
	return false, nil
}

// Terminate forgets id; terminating an unknown ID is not an error.
func (m *sessionIDs) Terminate(id string) (isNotAllowed bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.live, id)
	return false, nil
}

// requireLiveSession answers 404 to a GET or DELETE naming a session that
// is not live, as MCP's streamable HTTP transport asks: mcp-go checks the
// session of a POST itself, but would open a GET stream for any ID, a
// terminated one included.
func requireLiveSession(ids *sessionIDs, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodDelete {
			if id := r.Header.Get(server.HeaderKeySessionID); id != "" {
				if _, err := ids.Validate(id); err != nil {
					http.Error(w, "Not Found: "+err.Error(), http.StatusNotFound)
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}
