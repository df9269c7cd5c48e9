package upstream

import (
	"context"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// A Peer is the client side as upstreams see it: where their notifications
// go (progress, log messages, resource updates, list changes) and who
// answers their requests for sampling, elicitation and roots. mcpwarden's
// proxy routes each to the right client session. The ctx of a notification
// or request from an isolated child carries the Route of the caller that
// child serves (see CallerOf): it must reach only that caller's sessions
// (Route.Serves). Notify is called from the transport's reader and must not
// block.
type Peer interface {
	Notify(ctx context.Context, server string, n mcp.JSONRPCNotification)
	CreateMessage(ctx context.Context, server string, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)
	Elicit(ctx context.Context, server string, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error)
	ListRoots(ctx context.Context, server string, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error)
}

// peerHandlers adapt a Peer to mcp-go's client handlers for one server or
// isolated child. With them the upstream session declares the sampling,
// elicitation and roots capabilities, so the upstream may use them; the
// proxy refuses what the calling client cannot do.
type peerHandlers struct {
	s *server
}

func (h peerHandlers) peer() (Peer, error) {
	p := h.s.env.peer()
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
	return p.CreateMessage(h.s.peerContext(ctx), h.s.name, req)
}

func (h peerHandlers) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	p, err := h.peer()
	if err != nil {
		return nil, err
	}
	return p.Elicit(h.s.peerContext(ctx), h.s.name, req)
}

func (h peerHandlers) ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	p, err := h.peer()
	if err != nil {
		return nil, err
	}
	return p.ListRoots(h.s.peerContext(ctx), h.s.name, req)
}

// clientOptions are the handlers an upstream session gets; mcp-go's
// client declares a capability for each (roots with listChanged, which
// RootsChanged honours). Sampling is left out for a server whose sampling
// is denied (Spec.NoSampling), and elicitation and sampling for a child
// isolated per session whose client cannot be sent them (see Reach).
func (s *server) clientOptions() []client.ClientOption {
	r := Reach{Elicitation: true, Sampling: true}
	if s.reach != nil {
		r = *s.reach
	}
	return reachOptions(peerHandlers{s: s}, r, !s.spec.NoSampling)
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

// Request runs do with the client session that serves a client's request
// other than tools/call (resources, prompts, completion, logging) to the
// named server, and the capabilities its server declared. A server
// isolated per principal or per session serves it from the child of the
// caller route names, started on first use and kept from being reaped
// until do returns; route.Instance then names it (route is nil only for a
// server that is not isolated). A
// request that would need one more child than isolation_max allows fails
// with ErrIsolationFull. Request waits while a child is starting, at most
// the server's CallTimeout, and fails fast while a server is down, like
// Session.
func (p *Pool) Request(ctx context.Context, name string, route *Route, do func(context.Context, *client.Client, mcp.ServerCapabilities) (any, error)) (any, error) {
	s, err := p.server(name)
	if err != nil {
		return nil, notSent(err)
	}
	var sess *session
	if s.kids != nil {
		var done func()
		if s, done, err = p.pick(ctx, s, route); err != nil {
			return nil, notSent(err)
		}
		defer done()
	}
	if s.instance != "" {
		wctx, cancel := context.WithTimeoutCause(ctx, s.spec.callTimeout(), errCallTimeout)
		sess, err = s.await(wctx)
		cancel()
		if err == nil {
			route.Instance = s.instanceName(sess)
		}
	} else {
		sess, err = s.current()
	}
	if err != nil {
		return nil, notSent(err)
	}
	res, err := do(ctx, sess.client, sess.client.GetServerCapabilities())
	sess.resubscribe(ctx) // a Subscribe or Unsubscribe of 2026-07-28 takes effect here
	return res, err
}
