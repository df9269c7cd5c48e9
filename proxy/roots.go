package proxy

import (
	"context"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/proxy/ask"
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
	*base    // the mcp-go server that asks the clients
	mu       sync.Mutex
	sessions map[string][]string // cached roots; empty is "no roots"
	// changes counts each session's forgets, so that a fetch that was under
	// way when the roots changed is not cached.
	changes map[string]uint64
}

// rootsFor returns the roots of c's client. A client that did not declare
// the roots capability has none. A client on protocol 2025-11-25 or
// earlier is sent roots/list; one on 2026-07-28, which takes no
// server-to-client request within a call, is answered with an input
// request for its roots (input), and its retry carries them.
func (rc *rootCache) rootsFor(ctx context.Context, c *call, req mcp.CallToolRequest) (roots []string, input *mcp.CallToolResult) {
	caps, modern := ask.ClientCapabilities(ctx)
	if caps == nil || caps.Roots == nil {
		return nil, nil
	}
	if !modern {
		return rc.rootsOf(ctx, c.session), nil
	}
	if res := server.RootsResponse(req.Params.InputResponses, ask.RootsInputID); res != nil {
		c.rootsByInput = true
		roots = localRoots(res.Roots)
		rc.store(c.session, roots, rc.generation(c.session))
		return roots, nil
	}
	if roots, ok := rc.cached(c.session); ok {
		return roots, nil
	}
	return nil, server.NewInputRequestBuilder(req.Params.RequestState).Roots(ask.RootsInputID).ToolResult()
}

// rootsOf returns a legacy client's roots, asking it with roots/list when
// they are not known.
func (rc *rootCache) rootsOf(ctx context.Context, session string) []string {
	if session == "" {
		return nil
	}
	rc.mu.Lock()
	roots, ok := rc.sessions[session]
	gen := rc.changes[session]
	rc.mu.Unlock()
	if ok {
		return roots
	}
	rctx, cancel := context.WithTimeout(ctx, rootsTimeout)
	defer cancel()
	res, err := rc.mcp.RequestRoots(rctx, mcp.ListRootsRequest{Request: mcp.Request{Method: string(mcp.MethodListRoots)}})
	if err != nil {
		rc.logger.Warn("asking the client for its roots; deciding without them", "session", session, "err", err)
		return nil
	}
	roots = localRoots(res.Roots)
	rc.store(session, roots, gen)
	return roots
}

// cached returns a session's roots if they are known.
func (rc *rootCache) cached(session string) ([]string, bool) {
	if session == "" {
		return nil, false
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	roots, ok := rc.sessions[session]
	return roots, ok
}

// generation is the session's count of forgets, for store.
func (rc *rootCache) generation(session string) uint64 {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.changes[session]
}

// store keeps roots fetched at generation gen, unless they changed since.
func (rc *rootCache) store(session string, roots []string, gen uint64) {
	if session == "" {
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.changes[session] != gen {
		return
	}
	if rc.sessions == nil {
		rc.sessions = map[string][]string{}
	}
	rc.sessions[session] = roots
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
