package upstream

import (
	"context"
	"io"
	"net"
	"net/netip"

	"github.com/mcpwarden/mcpwarden/internal/egress"
)

// An EgressPolicy decides and records a sandboxed server's outbound
// connections: every connection a server with network: proxy asks its
// egress proxy for. The Peer given to Pool.Start is checked for it; without
// one every connection is refused.
type EgressPolicy interface {
	// DecideConnect decides one connection server (or its isolated child,
	// from != nil) asked its egress proxy for. It may block while a human
	// is asked; ctx ends when the proxy closes.
	DecideConnect(ctx context.Context, server string, from *Route, r egress.Request) egress.Verdict
	// ReportConnect records how a connection ended (audit result event).
	ReportConnect(server string, from *Route, rep egress.Report)
	// NamesAddress reports whether a rule names addr (special addresses:
	// loopback, private, metadata...) for host and port.
	NamesAddress(server, host string, addr netip.Addr, port uint16) bool
}

// noEgressPolicy is the reason every connection is refused when the pool's
// peer decides none.
const noEgressPolicy = "mcpwarden has no egress policy here to decide this connection, so it is refused; run the server behind mcpwarden serve, or give it sandbox.network: none or host"

// caller is the Route of the caller an isolated child serves, nil for any
// other server; a fresh one each time, so that no receiver changes the
// child's.
func (s *server) caller() *Route {
	if s.instance == "" {
		return nil
	}
	return &Route{Principal: s.owner.principal, Session: s.owner.session, Instance: s.instance}
}

// serveEgress serves the egress proxy of one of s's processes on l, each
// connection decided, its special addresses let through and its end
// recorded by the pool's peer as an EgressPolicy, attributed to s (and to
// the caller of an isolated child). Closing what it returns stops the
// proxy, ends its connections and closes l; call it once the process has
// exited.
func (s *server) serveEgress(l net.Listener) io.Closer {
	pol, _ := s.env.peer().(EgressPolicy)
	decide := egress.DeciderFunc(func(ctx context.Context, r egress.Request) egress.Verdict {
		if pol == nil {
			return egress.Verdict{Reason: noEgressPolicy}
		}
		return pol.DecideConnect(ctx, s.name, s.caller(), r)
	})
	opts := &egress.Options{
		NamesAddress: func(host string, addr netip.Addr, port uint16) bool {
			return pol != nil && pol.NamesAddress(s.name, host, addr, port)
		},
		Report: func(rep egress.Report) {
			s.logger.Debug("egress connection", "host", rep.Request.Host, "port", rep.Request.Port,
				"outcome", rep.Outcome, "addr", rep.Addr, "sent", rep.Sent, "received", rep.Received, "err", rep.Err)
			if pol != nil {
				pol.ReportConnect(s.name, s.caller(), rep)
			}
		},
	}
	px := egress.New(decide, opts)
	s.logger.Info("egress proxy serving the sandboxed server", "listener", l.Addr().String(), "policy", pol != nil)
	go px.Serve(context.Background(), l)
	return px
}
