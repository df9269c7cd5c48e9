// Package roots keeps each client session's MCP roots as local
// directories, for a policy's workspace_from_roots: asked of the client
// (roots/list, or an input request on protocol 2026-07-28) at the first
// call that needs them, and again after the client says they changed.
package roots

import (
	"context"
	"log/slog"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// timeout bounds asking a client for its roots.
const timeout = 5 * time.Second

// InputID keys the roots request in a multi round-trip input request.
const InputID = "mcpwarden_roots"

// A Lister asks a client session for its roots; mcp-go's
// *server.MCPServer is one.
type Lister interface {
	RequestRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error)
}

// A Cache keeps each client session's MCP roots as local directories,
// for workspace_from_roots: fetched from the client (roots/list) at the
// first call that needs them, and again after the client says they changed
// (notifications/roots/list_changed). A failed fetch is not kept: the call
// is decided without roots (everything outside the workspace) and the next
// call asks again. It is safe for concurrent use.
type Cache struct {
	client   Lister
	logger   *slog.Logger
	mu       sync.Mutex
	sessions map[string][]string // cached roots; empty is "no roots"
	// changes counts each session's forgets, so that a fetch that was under
	// way when the roots changed is not cached.
	changes map[string]uint64
}

// New returns an empty cache that asks client for roots and logs a
// failed fetch to logger.
func New(client Lister, logger *slog.Logger) *Cache {
	return &Cache{client: client, logger: logger}
}

// For returns the roots of a session's client, given what it declared
// (caps) and whether it speaks protocol 2026-07-28 or later (modern). A
// client that did not declare the roots capability has none. A client on
// protocol 2025-11-25 or earlier is sent roots/list; a modern one, which
// takes no server-to-client request within a call, is answered with an
// input request for its roots (input), and its retry carries them
// (byInput).
func (rc *Cache) For(ctx context.Context, session string, caps *mcp.ClientCapabilities, modern bool, req mcp.CallToolRequest) (roots []string, byInput bool, input *mcp.CallToolResult) {
	if caps == nil || caps.Roots == nil {
		return nil, false, nil
	}
	if !modern {
		return rc.rootsOf(ctx, session), false, nil
	}
	if res := server.RootsResponse(req.Params.InputResponses, InputID); res != nil {
		roots = localRoots(res.Roots)
		rc.store(session, roots, rc.generation(session))
		return roots, true, nil
	}
	if roots, ok := rc.cached(session); ok {
		return roots, false, nil
	}
	return nil, false, server.NewInputRequestBuilder(req.Params.RequestState).Roots(InputID).ToolResult()
}

// rootsOf returns a legacy client's roots, asking it with roots/list when
// they are not known.
func (rc *Cache) rootsOf(ctx context.Context, session string) []string {
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
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := rc.client.RequestRoots(rctx, mcp.ListRootsRequest{Request: mcp.Request{Method: string(mcp.MethodListRoots)}})
	if err != nil {
		rc.logger.Warn("asking the client for its roots; deciding without them", "session", session, "err", err)
		return nil
	}
	roots = localRoots(res.Roots)
	rc.store(session, roots, gen)
	return roots
}

// cached returns a session's roots if they are known.
func (rc *Cache) cached(session string) ([]string, bool) {
	if session == "" {
		return nil, false
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	roots, ok := rc.sessions[session]
	return roots, ok
}

// generation is the session's count of forgets, for store.
func (rc *Cache) generation(session string) uint64 {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.changes[session]
}

// store keeps roots fetched at generation gen, unless they changed since.
func (rc *Cache) store(session string, roots []string, gen uint64) {
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

// Forget drops a session's roots because they changed: they are asked
// again at its next call.
func (rc *Cache) Forget(session string) {
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

// End forgets everything about a session that has ended.
func (rc *Cache) End(session string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	delete(rc.sessions, session)
	delete(rc.changes, session)
}

// Len counts the rows the cache keeps (cached roots and forget counts),
// so that a test can check an ended session leaves none.
func (rc *Cache) Len() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.sessions) + len(rc.changes)
}
