package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// A relay carries what travels with a forwarded call between the client
// session that made it and the upstream: progress notifications (the
// client's progress token is replaced by one unique to mcpwarden and mapped
// back) and the upstream's own requests for sampling, elicitation and roots,
// which go to the session of the newest call in flight to that upstream.
// Cancellation needs no relay: the call's context ends and the upstream
// client sends notifications/cancelled.
type relay struct {
	mu     sync.Mutex
	next   uint64
	tokens map[string]progressRoute // mcpwarden's token → where it goes
	active map[string][]*inflight   // server → calls in flight, oldest first
	// last is the newest client session heard from, for an upstream's
	// request that comes while none of its calls is in flight (roots/list
	// after the client's roots/list_changed, say). Without cancellation:
	// the request it came with may be over.
	last context.Context
}

// An inflight is one forwarded call, for routing what the upstream sends
// back while it runs.
type inflight struct{ ctx context.Context }

type progressRoute struct {
	ctx   context.Context // the client's call
	token mcp.ProgressToken
}

var _ upstream.Peer = (*Server)(nil)

// A PeerSlot is an upstream.Peer that forwards to a Server once it is set:
// the upstream pool starts, and hears from its servers, before the proxy
// that answers them exists. Until then, notifications are dropped and
// requests refused.
type PeerSlot struct{ srv atomic.Pointer[Server] }

var _ upstream.Peer = (*PeerSlot)(nil)

// Set makes s the peer.
func (p *PeerSlot) Set(s *Server) { p.srv.Store(s) }

func (p *PeerSlot) Notify(server string, n mcp.JSONRPCNotification) {
	if s := p.srv.Load(); s != nil {
		s.Notify(server, n)
	}
}

func (p *PeerSlot) CreateMessage(ctx context.Context, server string, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	if s := p.srv.Load(); s != nil {
		return s.CreateMessage(ctx, server, req)
	}
	return nil, errNoCaller
}

func (p *PeerSlot) Elicit(ctx context.Context, server string, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	if s := p.srv.Load(); s != nil {
		return s.Elicit(ctx, server, req)
	}
	return nil, errNoCaller
}

func (p *PeerSlot) ListRoots(ctx context.Context, server string, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	if s := p.srv.Load(); s != nil {
		return s.ListRoots(ctx, server, req)
	}
	return nil, errNoCaller
}

// callUpstream forwards one tools/call to its upstream server. It is the
// one place where a client's call meets the upstream session.
func (s *Server) callUpstream(ctx context.Context, server string, params mcp.CallToolParams) (json.RawMessage, error) {
	r := &s.relay
	r.mu.Lock()
	if r.active == nil {
		r.active = map[string][]*inflight{}
		r.tokens = map[string]progressRoute{}
	}
	entry := &inflight{ctx: ctx}
	r.last = context.WithoutCancel(ctx)
	r.active[server] = append(r.active[server], entry)
	var token string
	params.Meta = upstreamMeta(params.Meta)
	if params.Meta != nil && params.Meta.ProgressToken != nil {
		r.next++
		token = "mcpwarden-" + strconv.FormatUint(r.next, 10)
		r.tokens[token] = progressRoute{ctx: ctx, token: params.Meta.ProgressToken}
		params.Meta.ProgressToken = token
	}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		calls := r.active[server]
		for i, e := range calls {
			if e == entry {
				r.active[server] = append(calls[:i:i], calls[i+1:]...)
				break
			}
		}
		if token != "" {
			delete(r.tokens, token)
		}
	}()
	return s.upstream.Call(ctx, server, params)
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

// caller is the context of the newest call in flight to server, the
// session an upstream's request to the client belongs to, else of the
// newest session heard from.
func (s *Server) caller(server string) (context.Context, bool) {
	s.relay.mu.Lock()
	defer s.relay.mu.Unlock()
	calls := s.relay.active[server]
	if len(calls) == 0 {
		return s.relay.last, s.relay.last != nil
	}
	return calls[len(calls)-1].ctx, true
}

// Notify routes an upstream's notification to the clients.
func (s *Server) Notify(server string, n mcp.JSONRPCNotification) {
	params := maps.Clone(n.Params.AdditionalFields)
	if params == nil {
		params = map[string]any{}
	}
	if n.Params.Meta != nil {
		params["_meta"] = n.Params.Meta
	}
	switch n.Method {
	case string(mcp.MethodNotificationProgress):
		token := fmt.Sprint(params["progressToken"])
		s.relay.mu.Lock()
		route, ok := s.relay.tokens[token]
		s.relay.mu.Unlock()
		if !ok {
			return // the call has ended, or the token was never ours
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
		if ctx, ok := s.caller(server); ok {
			_ = s.mcp.SendNotificationToClient(ctx, n.Method, params)
			return
		}
		s.mcp.SendNotificationToAllClients(n.Method, params)
	case mcp.MethodNotificationResourceUpdated:
		if uri, _ := params["uri"].(string); uri != "" {
			params["uri"] = s.catalog.exposedURI(server, uri)
		}
		s.mcp.SendNotificationToAllClients(n.Method, params)
	case string(mcp.MethodNotificationResourcesListChanged), string(mcp.MethodNotificationPromptsListChanged):
		s.refreshCatalogLater(server)
	}
}

// rootsChanged passes a client's notifications/roots/list_changed to every
// upstream, which may then ask for the new roots.
func (s *Server) rootsChanged(ctx context.Context, _ mcp.JSONRPCNotification) {
	s.relay.mu.Lock()
	s.relay.last = context.WithoutCancel(ctx)
	s.relay.mu.Unlock()
	for _, name := range s.upstream.Names() {
		cl, _, err := s.ownSession(name)
		if err != nil {
			continue
		}
		if err := cl.RootListChanges(ctx); err != nil {
			s.logger.Debug("passing roots/list_changed upstream", "server", name, "err", err)
		}
	}
}

// errNoCaller answers an upstream request made while no call to it is in
// flight: mcpwarden cannot tell which client it is for.
var errNoCaller = errors.New("mcpwarden: no client call to this server is in flight, so there is no client to ask")

// CreateMessage passes an upstream's sampling request to the client whose
// call is in flight, unless the server's policy denies sampling. Both are
// audited.
func (s *Server) CreateMessage(_ context.Context, server string, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	ctx, ok := s.caller(server)
	if !ok {
		return nil, errNoCaller
	}
	ev := audit.Event{Event: audit.KindDecision, Server: server, Tool: "sampling/createMessage", PolicySHA256: s.policy.Load().SHA256(), GrantedBy: audit.GrantedByRule}
	if s.settings.Load().samplingDenied[server] {
		ev.Decision, ev.Rule = "deny", "servers."+server+".policy.sampling: deny"
		s.writeAudit(ctx, ev)
		return nil, fmt.Errorf("mcpwarden: sampling is denied for server %q (servers.%s.policy.sampling)", server, server)
	}
	ev.Decision, ev.Rule = "allow", "sampling: allow"
	if err := s.writeAudit(ctx, ev); err != nil && s.audit.Required() {
		return nil, fmt.Errorf("mcpwarden: the audit log cannot be written, so sampling is refused: %w", err)
	}
	return s.mcp.RequestSampling(ctx, req)
}

// Elicit passes an upstream's elicitation to the client whose call is in
// flight.
func (s *Server) Elicit(_ context.Context, server string, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	ctx, ok := s.caller(server)
	if !ok {
		return nil, errNoCaller
	}
	return s.mcp.RequestElicitation(ctx, req)
}

// ListRoots asks the client whose call is in flight for its roots.
func (s *Server) ListRoots(_ context.Context, server string, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	ctx, ok := s.caller(server)
	if !ok {
		return nil, errNoCaller
	}
	return s.mcp.RequestRoots(ctx, req)
}
