package proxy

import (
	"crypto/rand"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/rules"
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
	// owners maps a live session to the principal that opened it; a
	// session is bound when its ID is first sent, in initialize's
	// response headers.
	owners map[string]string
}

var _ server.SessionIdManager = (*sessionIDs)(nil)

func newSessionIDs() *sessionIDs {
	return &sessionIDs{live: make(map[string]struct{}), owners: make(map[string]string)}
}

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
	delete(m.owners, id)
	return false, nil
}

// bind records principal as the owner of a live session that has none.
func (m *sessionIDs) bind(id, principal string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, live := m.live[id]; !live {
		return
	}
	if _, owned := m.owners[id]; !owned {
		m.owners[id] = principal
	}
}

// owner returns the principal that opened a session; live says whether
// the session is live at all. A live session without an owner was issued
// in a response whose headers the guard did not see.
func (m *sessionIDs) owner(id string) (principal string, live bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, live = m.live[id]
	return m.owners[id], live
}

// sessionGuard keeps each HTTP session to its principal and answers 404
// to a GET or DELETE naming a session that is not live, as MCP's
// streamable HTTP transport asks (mcp-go checks the session of a POST
// itself, but would open a GET stream for any ID, a terminated one
// included).
//
// The principal a request was authenticated as (a token's, or
// PrincipalAnonymous without auth) becomes the owner of the session whose
// ID the response issues, before the ID is sent. A later request naming
// that session as another principal — another token, or none — is refused
// with 403 and audited: a session's grants, pending asks and upstream
// requests are its owner's.
func (s *Server) sessionGuard(ids *sessionIDs, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		principal := s.principalOf(r.Context())
		id := r.Header.Get(server.HeaderKeySessionID)
		if id == "" {
			next.ServeHTTP(&bindingWriter{ResponseWriter: w, bind: func(issued string) { ids.bind(issued, principal) }}, r)
			return
		}
		if r.Method == http.MethodGet || r.Method == http.MethodDelete {
			if _, err := ids.Validate(id); err != nil {
				http.Error(w, "Not Found: "+err.Error(), http.StatusNotFound)
				return
			}
		}
		// An unowned live session fails closed: no one can prove to own it.
		if owner, live := ids.owner(id); live && owner != principal {
			s.writeAudit(r.Context(), audit.Event{
				Event:        audit.KindDecision,
				Session:      id,
				Principal:    principal,
				Profile:      s.profileOf(r.Context()),
				Method:       r.Method + " " + EndpointPath,
				Decision:     rules.Deny.String(),
				Rule:         ruleSessionOwner,
				GrantedBy:    audit.GrantedByRule,
				Reason:       "the session belongs to another principal",
				PolicySHA256: s.policy.Load().SHA256(),
			})
			http.Error(w, "Forbidden: this session was opened by another principal", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ruleSessionOwner names the built-in rule that keeps a session to its
// principal, in audit events.
const ruleSessionOwner = "builtin:session-owner"

// A bindingWriter calls bind with the session ID a response issues, when
// its headers are written (before the client can learn the ID).
type bindingWriter struct {
	http.ResponseWriter
	bind  func(id string)
	bound bool
}

func (b *bindingWriter) WriteHeader(code int) {
	if !b.bound {
		b.bound = true
		if id := b.Header().Get(server.HeaderKeySessionID); id != "" {
			b.bind(id)
		}
	}
	b.ResponseWriter.WriteHeader(code)
}

func (b *bindingWriter) Write(p []byte) (int, error) {
	if !b.bound {
		b.WriteHeader(http.StatusOK)
	}
	return b.ResponseWriter.Write(p)
}

// Flush passes on to the underlying writer, for SSE.
func (b *bindingWriter) Flush() {
	if !b.bound {
		b.WriteHeader(http.StatusOK)
	}
	if f, ok := b.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (b *bindingWriter) Unwrap() http.ResponseWriter { return b.ResponseWriter }
