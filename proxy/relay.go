package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// A relay carries what travels with a forwarded request between the client
// session that made it and the upstream: progress notifications (the
// client's progress token is replaced by one unique to mcpwarden and mapped
// back) and the upstream's own requests for sampling and elicitation,
// which go to the session of a request in flight to that upstream (see
// target). Cancellation needs no relay: the request's context ends and
// the upstream client sends notifications/cancelled.
type relay struct {
	*base
	core     // decides and audits the upstreams' requests
	sessions *clientSessions
	catalog  *catalog
	listens  *listenStreams // 2026-07-28 clients' listen streams
	mu       sync.Mutex
	next     uint64
	tokens   map[string]progressRoute // mcpwarden's token → where it goes
	active   map[string][]*inflight   // server → requests in flight, oldest first
}

// An inflight is one forwarded request, for routing what the upstream
// sends back while it runs, with who sent it.
type inflight struct {
	ctx       context.Context
	principal string
	session   string
}

// enter records a request to server in flight until leave is called.
func (s *relay) enter(ctx context.Context, server string) (leave func()) {
	entry := &inflight{ctx: ctx, principal: s.principalOf(ctx), session: sessionIDOf(ctx)}
	s.mu.Lock()
	if s.active == nil {
		s.active = map[string][]*inflight{}
	}
	s.active[server] = append(s.active[server], entry)
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		calls := s.active[server]
		for i, e := range calls {
			if e == entry {
				s.active[server] = append(calls[:i:i], calls[i+1:]...)
				break
			}
		}
	}
}

type progressRoute struct {
	ctx       context.Context // the client's call
	token     mcp.ProgressToken
	principal string // who made the call, so that only its child reaches it
	session   string
}

// sessionIDOf is the id of the client session in ctx, "" without one.
func sessionIDOf(ctx context.Context) string {
	if cs := server.ClientSessionFromContext(ctx); cs != nil {
		return cs.SessionID()
	}
	return ""
}

var _ upstream.Peer = (*relay)(nil)

// callUpstream forwards one tools/call to its upstream server, served by
// the child route names when the server is isolated (route.Instance then
// names it). It is the one place where a client's call meets the upstream
// session.
func (s *relay) callUpstream(ctx context.Context, server string, route *upstream.Route, params mcp.CallToolParams) (json.RawMessage, error) {
	defer s.enter(ctx, server)()
	s.mu.Lock()
	if s.tokens == nil {
		s.tokens = map[string]progressRoute{}
	}
	var token string
	params.Meta = upstreamMeta(params.Meta)
	if params.Meta != nil && params.Meta.ProgressToken != nil {
		s.next++
		token = "mcpwarden-" + strconv.FormatUint(s.next, 10)
		s.tokens[token] = progressRoute{ctx: ctx, token: params.Meta.ProgressToken, principal: s.principalOf(ctx), session: sessionIDOf(ctx)}
		params.Meta.ProgressToken = token
	}
	s.mu.Unlock()
	if token != "" {
		defer func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			delete(s.tokens, token)
		}()
	}
	return s.upstream.Call(ctx, server, route, params)
}

// upstreamMeta is the part of a client's _meta that is forwarded: a copy
// without the io.modelcontextprotocol/ keys, which describe the client's
// own protocol session with mcpwarden (its version, identity and
// capabilities), not the upstream's. nil stays nil.
func upstreamMeta(m *mcp.Meta) *mcp.Meta {
	if m == nil {
		return nil
	}
	out := &mcp.Meta{ProgressToken: m.ProgressToken}
	for k, v := range m.AdditionalFields {
		if strings.HasPrefix(k, "io.modelcontextprotocol/") {
			continue
		}
		if out.AdditionalFields == nil {
			out.AdditionalFields = map[string]any{}
		}
		out.AdditionalFields[k] = v
	}
	if out.ProgressToken == nil && out.AdditionalFields == nil {
		return nil
	}
	return out
}

// Notify routes an upstream's notification to the clients. One from an
// isolated child (upstream.CallerOf(ctx) is not nil) reaches only the
// sessions that child serves: a progress token of another caller's call,
// guessed or replayed, goes nowhere.
func (s *relay) Notify(ctx context.Context, server string, n mcp.JSONRPCNotification) {
	from := upstream.CallerOf(ctx)
	params := maps.Clone(n.Params.AdditionalFields)
	if params == nil {
		params = map[string]any{}
	}
	if n.Params.Meta != nil {
		params["_meta"] = n.Params.Meta
	}
	switch n.Method {
	case string(mcp.MethodNotificationProgress), string(mcp.MethodNotificationMessage):
		// Scanned as results are (notify_scan.go); nil means withheld.
		if params = s.scanNotification(ctx, server, mcp.MCPMethod(n.Method), params); params == nil {
			return
		}
	}
	switch n.Method {
	case string(mcp.MethodNotificationProgress):
		token := fmt.Sprint(params["progressToken"])
		s.mu.Lock()
		route, ok := s.tokens[token]
		s.mu.Unlock()
		if !ok || !from.Serves(route.principal, route.session) {
			return // the call has ended, or the token was never ours, or is another caller's
		}
		params["progressToken"] = route.token
		_ = s.mcp.SendNotificationToClient(route.ctx, n.Method, params)
	case string(mcp.MethodNotificationMessage):
		// The server is named in the logger, so a client sees whose message it is.
		if logger, _ := params["logger"].(string); logger != "" {
			params["logger"] = server + "/" + logger
		} else {
			params["logger"] = server
		}
		// Only to the session it belongs to (see target); none if that
		// cannot be told.
		if ctx, err := s.recipient(from, server, mcp.MCPMethod(n.Method)); err == nil {
			_ = s.mcp.SendNotificationToClient(ctx, n.Method, params)
		}
	case mcp.MethodNotificationResourceUpdated:
		if uri, _ := params["uri"].(string); uri != "" {
			params["uri"] = s.catalog.exposedURI(server, uri)
		}
		// To every session that may read the server's resources and, from
		// an isolated child, is one it serves.
		policy := s.current().policy
		for _, k := range s.sessions.all() {
			if from.Serves(k.principal, k.id) && !policy.Hidden(rules.Call{Profile: k.profile, Server: server, Tool: string(mcp.MethodResourcesRead)}) {
				_ = s.mcp.SendNotificationToClient(k.ctx, n.Method, params)
			}
		}
		s.listens.notify(policy, from, server, params) // and to 2026-07-28 clients' listen streams
	case string(mcp.MethodNotificationResourcesListChanged), string(mcp.MethodNotificationPromptsListChanged):
		s.catalog.refreshLater(server)
	}
}
