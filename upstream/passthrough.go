package upstream

import (
	"context"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// A Peer is the client side as upstreams see it: where their notifications
// go (progress, log messages, resource updates, list changes) and who
// answers their requests for sampling, elicitation and roots. mcpwarden's
// proxy routes each to the right client session. Notify is called from the
// transport's reader and must not block.
type Peer interface {
	Notify(server string, n mcp.JSONRPCNotification)
	CreateMessage(ctx context.Context, server string, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)
	Elicit(ctx context.Context, server string, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error)
	ListRoots(ctx context.Context, server string, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error)
}

// peerHandlers adapt a Peer to mcp-go's client handlers for one server.
// With them the upstream session declares the sampling, elicitation and
// roots capabilities, so the upstream may use them; the proxy refuses what
// the calling client cannot do.
type peerHandlers struct {
	env    *supervisorEnv
	server string
}

func (h peerHandlers) peer() (Peer, error) {
	p := h.env.peer()
	if p == nil {
		return nil, ErrNoPeer
	}
	return p, nil
}

func (h peerHandlers) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	p, err := h.peer()
	if err != nil {
		return nil, err
	}
	return p.CreateMessage(ctx, h.server, req)
}

func (h peerHandlers) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	p, err := h.peer()
	if err != nil {
		return nil, err
	}
	return p.Elicit(ctx, h.server, req)
}

func (h peerHandlers) ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	p, err := h.peer()
	if err != nil {
		return nil, err
	}
	return p.ListRoots(ctx, h.server, req)
}

// clientOptions are the handlers every upstream session gets.
func (s *server) clientOptions() []client.ClientOption {
	h := peerHandlers{env: s.env, server: s.name}
	return []client.ClientOption{
		client.WithSamplingHandler(h),
		client.WithElicitationHandler(h),
		client.WithRootsHandler(h),
	}
}

// Session returns the live client session of a server and the
// capabilities its server declared, for requests other than tools/call
// (resources, prompts, completion, logging) that are passed through as
// they are. It fails fast while the server is down.
func (p *Pool) Session(name string) (*client.Client, mcp.ServerCapabilities, error) {
	s, err := p.server(name)
	if err != nil {
		return nil, mcp.ServerCapabilities{}, err
	}
	sess, err := s.current()
	if err != nil {
		return nil, mcp.ServerCapabilities{}, err
	}
	return sess.client, sess.client.GetServerCapabilities(), nil
}
