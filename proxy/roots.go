package proxy

import (
	"context"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// rootsTimeout bounds asking a client for its roots.
const rootsTimeout = 5 * time.Second

// A rootCache keeps each client session's MCP roots as local directories,
// for workspace_from_roots: fetched from the client (roots/list) at the
// first call that needs them, and again after the client says they changed
// (notifications/roots/list_changed). A failed fetch is not kept: the call
// is decided without roots (everything outside the workspace) and the next
// call asks again. It is safe for concurrent use.
type rootCache struct {
	mu       sync.Mutex
	sessions map[string][]string // cached roots; empty is "no roots"
	// changes counts each session's forgets, so that a fetch that was under
	// way when the roots changed is not cached.
	changes map[string]uint64
}

// rootsOf returns the calling client's roots, asking it when they are not
// known. A client that did not declare the roots capability, or one on
// the 2026-07-28 protocol (no server-to-client requests in a call), has
// none.
func (s *Server) rootsOf(ctx context.Context, session string) []string {
	caps, modern := clientCapabilities(ctx)
	if session == "" || modern || caps == nil || caps.Roots == nil {
		return nil
	}
	rc := &s.roots
	rc.mu.Lock()
	roots, ok := rc.sessions[session]
	gen := rc.changes[session]
	rc.mu.Unlock()
	if ok {
		return roots
	}
	rctx, cancel := context.WithTimeout(ctx, rootsTimeout)
	defer cancel()
	res, err := s.mcp.RequestRoots(rctx, mcp.ListRootsRequest{Request: mcp.Request{Method: string(mcp.MethodListRoots)}})
	if err != nil {
		s.logger.Warn("asking the client for its roots; deciding without them", "session", session, "err", err)
		return nil
	}
	roots = localRoots(res.Roots)
	rc.mu.Lock()
	if rc.sessions == nil {
		rc.sessions = map[string][]string{}
	}
	if rc.changes[session] == gen {
		rc.sessions[session] = roots
	}
	rc.mu.Unlock()
	return roots
}

// forget drops a session's roots: they changed, or the session ended.
func (rc *rootCache) forget(session string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	delete(rc.sessions, session)
	if rc.changes == nil {
		rc.changes = map[string]uint64{}
	}
	rc.changes[session]++
}

// localRoots turns file:// root URIs into clean absolute paths; roots of
// other schemes or on another host name no local directory and are left
// out. The result is never nil.
func localRoots(roots []mcp.Root) []string {
	out := []string{}
	for _, r := range roots {
		u, err := url.Parse(r.URI)
		if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || !filepath.IsAbs(u.Path) {
			continue
		}
		out = append(out, filepath.Clean(u.Path))
	}
	return out
}

// end forgets everything about a session that has ended.
func (rc *rootCache) end(session string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	delete(rc.sessions, session)
	delete(rc.changes, session)
}
