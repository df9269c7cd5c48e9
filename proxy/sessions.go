package proxy

import (
	"context"
	"sync"

	"github.com/mark3labs/mcp-go/server"
)

// A knownSession is a client session the proxy has heard from, for the
// upstream requests and notifications that come outside any request: its
// latest request's context (without its cancellation, for the session in
// it) and who it is.
type knownSession struct {
	id        string
	ctx       context.Context
	principal string
	profile   string
	seq       uint64 // order of the latest request, for "newest"
}

// clientSessions are the client sessions heard from and not yet ended. It
// is safe for concurrent use.
type clientSessions struct {
	mu   sync.Mutex
	seq  uint64
	byID map[string]knownSession
}

// heard records that the session in ctx, of principal under profile,
// sent a request. A request without a session ID (protocol 2026-07-28
// over HTTP, served by an ephemeral session that ends with it) leaves no
// session to reach later.
func (m *clientSessions) heard(ctx context.Context, principal, profile string) {
	cs := server.ClientSessionFromContext(ctx)
	if cs == nil || cs.SessionID() == "" {
		return
	}
	k := knownSession{id: cs.SessionID(), ctx: context.WithoutCancel(ctx), principal: principal, profile: profile}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byID == nil {
		m.byID = map[string]knownSession{}
	}
	m.seq++
	k.seq = m.seq
	m.byID[cs.SessionID()] = k
}

// forget drops an ended session.
func (m *clientSessions) forget(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byID, id)
}

// all returns the known sessions, in no order.
func (m *clientSessions) all() []knownSession {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]knownSession, 0, len(m.byID))
	for _, k := range m.byID {
		out = append(out, k)
	}
	return out
}
