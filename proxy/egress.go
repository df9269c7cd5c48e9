package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/argview"
	"github.com/mcpwarden/mcpwarden/internal/egress"
	"github.com/mcpwarden/mcpwarden/internal/hostport"
	"github.com/mcpwarden/mcpwarden/proxy/ask"
	"github.com/mcpwarden/mcpwarden/proxy/connect"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// An egressPolicy is the egress policy of the pool the Server is the peer
// of (Server.Peer): each sandboxed server's egress proxy asks it.
type egressPolicy struct {
	*base
	core              // decides, arms and audits the connections
	relay *relay      // finds the session a connection is attributed to
	conns connections // the connections allowed and not yet reported
}

var _ upstream.EgressPolicy = (*egressPolicy)(nil)

// Egress decisions (docs/design.md, "Egress decisions"). Each connection a
// sandboxed server asks its egress proxy for is the request
// mcp:<server>:network/connect with the arguments {"host", "port"}, the
// host normalised as a URL host, decided as any upstream's request is
// (settleFromUpstream: rules, defaults, profiles, limits, flow labels, the
// ask) for the client session it is attributed to (recipient), audited
// with a decision event when it is decided and a result event when it
// ends.

// methodConnect is the request kind of a sandboxed server's outbound
// connection, mcp:<server>:network/connect. No MCP method has this name,
// and no tool name has a "/".
const methodConnect mcp.MCPMethod = rules.ToolConnect

// anyTool is a tool name no tool has, which only a rule denying every
// tool of a server (`mcp:fs:*`) hides: a connection is attributed to a
// session that may use its server at all, whose profile then decides it.
// Were sessions whose profile hides network/connect passed over, the
// connection would fall to another session or to none, decided under
// rules that the profile of the one using the server does not narrow.
const anyTool mcp.MCPMethod = "*"

// maxUnreported bounds the connections decided and not yet reported that
// are kept per endpoint, so that a proxy that never reports cannot make
// them pile up; the oldest is dropped (its result event then names no
// decision).
const maxUnreported = 1024

// connections are the connections allowed and not yet reported, by
// endpoint, oldest first, so that each result event names the decision
// it follows. Two connections to one endpoint from one child are
// indistinguishable but for their order, and the proxy reports them as
// they end, not as they began: their result events may swap decisions,
// which decided the same request for the same session. It is safe for
// concurrent use.
type connections struct {
	mu      sync.Mutex
	pending map[connKey][]*call
}

// A connKey is an endpoint one isolated child (or a shared server) asked for.
type connKey struct {
	server, instance, host string
	port                   uint16
}

func (cs *connections) add(k connKey, c *call) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.pending == nil {
		cs.pending = map[connKey][]*call{}
	}
	q := cs.pending[k]
	if len(q) >= maxUnreported {
		q = q[1:]
	}
	cs.pending[k] = append(q, c)
}

// take removes and returns the oldest connection pending for k, or nil.
func (cs *connections) take(k connKey) *call {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	q := cs.pending[k]
	if len(q) == 0 {
		return nil
	}
	c := q[0]
	if len(q) == 1 {
		delete(cs.pending, k)
	} else {
		cs.pending[k] = q[1:]
	}
	return c
}

// DecideConnect decides a connection server's egress proxy was asked for,
// r, from the isolated child from (nil for a shared server), before
// anything is resolved or dialled. It is attributed to the client session
// an upstream's request outside a call would go to (recipient), among
// those that may use the server at all (anyTool): that session's
// principal and profile decide, its labels and limits count,
// and an ask goes to its human ("github wants to connect to
// api.github.com:443") through elicitation, the approvals page and the
// resolvers. With sessions of several principals the newest decides, but
// no client is asked; with no session the rules decide as for a request
// without a token. Either way an ask then goes to the out-of-band
// resolvers only, or is refused when there are none. The host
// is normalised again here (hostport.NormalizeHost), so that no spelling
// of it reaches the rules. It blocks while a human is asked, until ctx
// ends.
func (s *egressPolicy) DecideConnect(ctx context.Context, server string, from *upstream.Route, r egress.Request) egress.Verdict {
	host, ok := hostport.NormalizeHost(r.Host)
	var nobody error
	sctx, err := s.relay.recipient(from, server, anyTool)
	switch {
	case errors.Is(err, errAmbiguousCaller):
		// The newest session's rules decide; its human is not asked
		// about what may be another principal's doing.
		nobody = fmt.Errorf("client sessions of more than one principal may use %s, so none of them is asked", server)
	case err != nil:
		nobody = fmt.Errorf("no client session that may use %s is connected to ask", server)
		sctx = ctx
	}
	if sctx != ctx {
		var stop context.CancelFunc
		sctx, stop = withCancelOf(sctx, ctx)
		defer stop()
	}
	c := s.newRequest(sctx, server, methodConnect, server, connect.ArgsOf(host, r.Port))
	if !ok || r.Port == 0 {
		c.argsErr = fmt.Errorf("the host %q and port %d are not an endpoint mcpwarden can decide", r.Host, r.Port)
	}
	refusal, err := s.settleFromUpstream(sctx, c, from, nobody)
	switch {
	case err != nil:
		return egress.Verdict{Reason: err.Error()}
	case refusal != "":
		return egress.Verdict{Reason: refusal}
	}
	// What the connection brings in arms its labels now: it flows from
	// the moment it is carried, not once it ends.
	if err := s.armBy(sctx, c); err != nil {
		return egress.Verdict{Reason: fmt.Sprintf("mcpwarden refused %s: %v", c.tool.Canonical, err)}
	}
	s.conns.add(connKey{server: server, instance: instanceOf(from), host: host, port: r.Port}, c)
	return egress.Verdict{Decision: egress.Allow, Reason: c.verdict.Reason}
}

// ReportConnect writes the result event of a connection of server's
// egress proxy that has ended: the bytes each way (result_bytes is what
// came back), how long it lasted, and in detail how it ended and the
// address dialled. A connection the Decider allowed names its decision
// event; one the proxy could not read (it never reached the Decider) gets
// a decision event of its own, a refusal. One the Decider refused has its
// decision event already and gets nothing more.
func (s *egressPolicy) ReportConnect(server string, from *upstream.Route, rep egress.Report) {
	ctx := context.Background()
	if rep.Verdict.Decision != egress.Allow {
		if rep.Outcome == egress.BadRequest {
			c := s.newRequest(ctx, server, methodConnect, server, connect.ArgsOf(rep.Request.Host, rep.Request.Port))
			c.verdict = rules.Verdict{Decision: rules.Deny, Reason: "the egress proxy cannot carry the request"}
			c.grantedBy, c.reason = audit.GrantedByRule, c.verdict.Reason
			if rep.Err != nil {
				c.failure = rep.Err.Error()
			}
			ev := c.decisionEvent()
			ev.Instance = instanceOf(from)
			ev.Detail = reportDetail(rep)
			s.writeAudit(ctx, ev)
		}
		return
	}
	host, ok := hostport.NormalizeHost(rep.Request.Host) // as DecideConnect keyed it
	if !ok {
		host = rep.Request.Host
	}
	c := s.conns.take(connKey{server: server, instance: instanceOf(from), host: host, port: rep.Request.Port})
	if c == nil { // not decided here (cannot be), or dropped (maxUnreported)
		c = s.newRequest(ctx, server, methodConnect, server, connect.ArgsOf(rep.Request.Host, rep.Request.Port))
	}
	ev := c.event(audit.KindResult)
	ev.Instance = instanceOf(from)
	ms := rep.Duration.Milliseconds()
	ev.DurationMS = &ms
	ev.ResultBytes = ptr(rep.Received)
	ev.IsError = ptr(rep.Outcome != egress.Carried)
	ev.Detail = reportDetail(rep)
	if rep.Err != nil {
		ev.Error = rep.Err.Error()
	}
	s.writeAudit(ctx, ev)
}

// reportDetail is a connection's end as the audit's detail states it:
// `egress tunnel carried addr=140.82.112.3:443 sent=517 received=4096`.
func reportDetail(rep egress.Report) string {
	addr := "none"
	if rep.Addr.IsValid() {
		addr = rep.Addr.String()
	}
	return fmt.Sprintf("egress %s %s addr=%s sent=%d received=%d", rep.Kind, rep.Outcome, addr, rep.Sent, rep.Received)
}

// NamesAddress reports whether a rule lets server's egress proxy dial
// addr, a special address (loopback, private, link-local, metadata, …),
// which the host (second argument) resolved to or is, on port: see
// NamesAddress, with the policy in force. The host is not read: a rule
// naming it does not name the addresses its DNS gives.
func (s *egressPolicy) NamesAddress(server, _ string, addr netip.Addr, port uint16) bool {
	return connect.NamesAddress(s.current().policy, server, addr, port)
}

// connectSummary says what an ask about a connection is about, attributed
// to its server: "github wants to connect to api.github.com:443".
func connectSummary(c *call, t ask.Target) string {
	return argview.Escape(c.tool.Server) + " wants to connect to " + argview.Escape(t.Endpoint)
}

// withCancelOf returns a context with the values of values (the session a
// connection is attributed to) that ends when either it or ctx (the
// connection's) ends, and a func that releases it.
func withCancelOf(values, ctx context.Context) (context.Context, context.CancelFunc) {
	out, cancel := context.WithCancelCause(values)
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	return out, func() { stop(); cancel(nil) }
}
