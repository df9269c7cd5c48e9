// Package proxy is the client-facing side of mcpwarden: an MCP server that
// re-exposes the upstream servers' tools, resources and prompts, decides
// every request that would reach an upstream with the rules (a tools/call
// as mcp:<server>:<tool>, any other request as mcp:<server>:<method>),
// writes the audit log and forwards what is allowed.
package proxy

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/approvals"
	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/telemetry"
	"github.com/mcpwarden/mcpwarden/proxy/ask"
	"github.com/mcpwarden/mcpwarden/proxy/drain"
	"github.com/mcpwarden/mcpwarden/proxy/naming"
	"github.com/mcpwarden/mcpwarden/proxy/roots"
	"github.com/mcpwarden/mcpwarden/proxy/wire"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// An Upstream is where allowed calls go: upstream.Pool in production, an
// in-process stand-in in tests.
type Upstream interface {
	Names() []string
	Tools(server string) ([]mcp.Tool, error)
	// Call returns the tools/call result object as the upstream sent it.
	// For an isolated server it is served by the child route names, and
	// sets route.Instance to that child's name.
	Call(ctx context.Context, server string, route *upstream.Route, params mcp.CallToolParams) (json.RawMessage, error)
	// Session is the live session for mcpwarden's own requests (listing).
	Session(server string) (*client.Client, mcp.ServerCapabilities, error)
	// Request runs do with the session that serves a client's request
	// other than tools/call: for an isolated server, the child of the
	// caller route names, whose name it sets in route.Instance.
	Request(ctx context.Context, server string, route *upstream.Route, do func(context.Context, *client.Client, mcp.ServerCapabilities) (any, error)) (any, error)
	// EndSession tells the upstreams that a client session has ended, so
	// that the children isolated per session that serve it stop.
	EndSession(session string)
	// RootsChanged tells a server that its roots (the workspace its
	// roots/list is answered with) changed.
	RootsChanged(ctx context.Context, server string)
	// Protocol is the protocol version the server's session speaks, ""
	// while it has none.
	Protocol(server string) string
}

var _ Upstream = (*upstream.Pool)(nil)

// Options configure a Server. Upstream, Policy and Audit are required.
type Options struct {
	Upstream Upstream
	Policy   *rules.Policy
	Audit    *audit.Log
	// Logger receives the human log; nil discards.
	Logger *slog.Logger
	// Naming says how tools get their wire names.
	Naming naming.Scheme
	// Version is reported to clients in initialize.
	Version string
	// Servers are the upstream servers' options, by name; a server not
	// named has the zero ServerOptions. Policy, Naming and Servers are the
	// first Settings, which Reload replaces.
	Servers map[string]ServerOptions
	// Pinning, when set, pins tool definitions and reacts to changed ones.
	Pinning *Pinning
	// Profile is the client profile of sessions whose requests carry none
	// (a stdio server started with --profile); "" means no profile.
	Profile string
	// Principal is who requests come from when they carry no token: ""
	// means PrincipalLocal (stdio); an HTTP listener without auth uses
	// PrincipalAnonymous.
	Principal string
	// AskTimeout bounds the wait for a human's answer to an ask; 0 means
	// DefaultAskTimeout.
	AskTimeout time.Duration
	// Resolvers answer the asks the calling client cannot be asked (it did
	// not declare elicitation, or SkipElicitation is set): the approvals
	// broker, an external resolver. The first one decides (docs/design.md, "Asking a human");
	// nil means none, so the ask_fallback applies.
	Resolvers []approvals.Resolver
	// SkipElicitation never asks through MCP elicitation, for clients that
	// declare it but do not show it (config ask.elicitation: false).
	SkipElicitation bool
	// Telemetry records metrics and traces of the calls and sessions; nil
	// records nothing.
	Telemetry *telemetry.Telemetry
	// MaxInflightBytes bounds the bytes of arguments and results held by
	// tools/calls in flight (config max_inflight_mb); 0 means
	// wire.DefaultMaxInflightBytes. See wire.Budget.
	MaxInflightBytes int64
	// Starting, if set, waits until the upstreams still on their first
	// start are up or failed, or ctx ends with its error
	// (upstream.Pool.WaitStarted). mcpwarden answers initialize at once;
	// requests that list or reach the upstreams' tools, resources or
	// prompts wait for the upstreams still starting, until StartupDeadline,
	// so that the first tools/list still shows those that start in time;
	// a tools/call of a tool not listed yet waits until it is, or until
	// every upstream has started or failed (see awaitStarting). nil waits
	// for nothing.
	Starting        func(ctx context.Context) error
	StartupDeadline time.Time
	// State, when set, is the state replicas share (config state:): the
	// HTTP listener's sessions, session grants and the single-use state
	// of multi round-trip asks live in it, so that any replica serves any
	// request of any session. When it cannot be reached the requests that
	// need it are refused. nil keeps all of it in this process, as with
	// one replica. The Server does not close it.
	State state.Store
}

// A Server is the MCP server clients connect to. It is safe for concurrent
// use by any number of client sessions.
type Server struct {
	base     // the upstreams, the mcp-go server, the snapshot, …
	audit    *audit.Log
	review   review
	relay    relay
	egress   egressPolicy
	sessions clientSessions
	listens  listenStreams  // 2026-07-28 clients' streams that name resources (listen.go)
	state    sessionState   // grants, labels, counts, request states
	armed    storedLabels   // the flow labels each session has armed
	limits   storedCounters // the limits' counters
	drain    drain.Tracker
	catalog  catalog
	tools    toolset
	asker    *ask.Asker
	input    *inputRelay // what upstreams ask 2026-07-28 clients for during their calls
	roots    *roots.Cache
	tel      *telemetry.Telemetry // nil: no telemetry
	inflight *wire.Budget
	starting func(ctx context.Context) error // see Options.Starting; nil
	startBy  time.Time                       // Options.StartupDeadline
}

// New builds the server. It does no I/O: it exposes no tools until it is
// told an upstream is up (UpstreamChanged), so the upstream pool is built
// first, then the proxy on it, then the pool is started with the proxy as
// its peer, and no event of an upstream comes before the proxy exists.
func New(o Options) (*Server, error) {
	if o.Upstream == nil || o.Policy == nil || o.Audit == nil {
		return nil, errors.New("proxy: Upstream, Policy and Audit are required")
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		base:     base{upstream: o.Upstream, logger: logger, profile: o.Profile, principal: cmp.Or(o.Principal, PrincipalLocal)},
		audit:    o.Audit,
		inflight: wire.NewBudget(o.MaxInflightBytes),
		tel:      o.Telemetry,
		starting: o.Starting,
		startBy:  o.StartupDeadline,
		state:    newSessionState(o.State),
	}
	s.armed, s.limits = s.state.labels(), s.state.counters()
	// The parts share s.base and reach the decide-and-forward core, s, through core.
	s.catalog.base, s.catalog.core = &s.base, s
	s.tools.base, s.tools.core, s.tools.review = &s.base, s, &s.review
	s.egress.base, s.egress.core, s.egress.relay = &s.base, s, &s.relay
	s.review.base, s.review.core, s.review.pinning = &s.base, s, o.Pinning
	s.relay.base, s.relay.core, s.relay.sessions, s.relay.catalog, s.relay.listens = &s.base, s, &s.sessions, &s.catalog, &s.listens
	s.snap.Store(&snapshot{policy: o.Policy, naming: o.Naming, names: &naming.Names{}, servers: o.Servers})

	hooks := &server.Hooks{}
	hooks.AddOnError(s.auditHiddenCall)
	hooks.AddBeforeSetLevel(s.catalog.setLevel)
	hooks.AddOnRequestInitialization(s.gateRequest)
	hooks.AddBeforeSubscriptionsListen(s.listening)
	hooks.AddAfterListResources(s.catalog.listedResources)
	hooks.AddAfterListResourceTemplates(s.catalog.listedTemplates)
	hooks.AddAfterListPrompts(s.catalog.listedPrompts)
	// mcp-go pairs the two: a session is unregistered only once, and only
	// if it was registered.
	hooks.AddOnRegisterSession(func(context.Context, server.ClientSession) { s.tel.SessionOpened() })
	hooks.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) {
		s.endSession(cs.SessionID())
	})
	version := o.Version
	if version == "" {
		version = "dev"
	}
	s.mcp = server.NewMCPServer("mcpwarden", version,
		server.WithToolCapabilities(true),
		server.WithResourceCapabilities(true, true),
		server.WithPromptCapabilities(true),
		server.WithLogging(),
		server.WithCompletions(),
		server.WithPromptCompletionProvider(&s.catalog),
		server.WithResourceCompletionProvider(&s.catalog),
		server.WithToolFilter(s.tools.listed),
		server.WithHooks(hooks),
		server.WithRecovery(),
		server.WithLogger(logger),
	)
	s.roots = roots.New(s.mcp, logger)
	// Upstreams get their roots from mcpwarden (the server's workspace),
	// so a client's roots/list_changed only drops the roots cached for
	// workspace_from_roots.
	// A session can be reached by upstream requests once initialized.
	s.mcp.AddNotificationHandler(string(mcp.MethodNotificationInitialized), func(ctx context.Context, _ mcp.JSONRPCNotification) {
		s.sessions.heard(ctx, s.principalOf(ctx), s.profileOf(ctx))
	})
	s.mcp.AddNotificationHandler(mcp.MethodNotificationRootsListChanged, func(ctx context.Context, _ mcp.JSONRPCNotification) {
		if cs := server.ClientSessionFromContext(ctx); cs != nil {
			s.roots.Forget(cs.SessionID()) // asked again at the next call
		}
	})
	timeout := o.AskTimeout
	if timeout <= 0 {
		timeout = DefaultAskTimeout
	}
	s.asker = &ask.Asker{MCP: s.mcp, Timeout: timeout, Resolvers: o.Resolvers, NoElicit: o.SkipElicitation, Keep: s.state.keeper()}
	s.input = &inputRelay{srv: s}
	return s, nil
}

// endSession is the one place a client session ends: what this process
// holds for it (waiting asks, the context upstream requests reach it by,
// cached roots, the upstream children isolated for it) and what the
// embedded store keeps of it (grants, armed labels) go.
func (s *Server) endSession(id string) {
	s.asker.Waiting.End(id)
	s.sessions.forget(id)
	s.roots.End(id)
	s.state.end(id)
	s.catalog.endSubscriptions(id)
	s.upstream.EndSession(id)
	s.tel.SessionClosed()
}

// ErrShuttingDown is the cause of the context of a request that shutdown
// cancelled, and what a request refused during shutdown is refused with.
var ErrShuttingDown = drain.ErrShuttingDown

// Drain refuses new requests and waits until the requests in progress
// have finished or ctx ends (the grace period), whichever is first; then
// it cancels those still in progress with ErrShuttingDown (see
// drain.Tracker.Drain). It is safe to call more than once.
func (s *Server) Drain(ctx context.Context) {
	s.input.drain() // no retry is taken now: the calls held for one end
	s.drain.Drain(ctx, s.logger)
}

// Close waits for the work the server started on its own (catalog
// refreshes after an upstream's list_changed, the results of held calls
// being recorded). It is idempotent.
func (s *Server) Close() {
	s.catalog.refreshG.Wait()
	s.input.abandoning.Wait()
}

// Peer is the proxy as the upstream pool sees it (upstream.Pool.Start):
// the relay of the upstreams' notifications and requests to the client
// sessions, and the egress policy of their sandboxes.
func (s *Server) Peer() upstream.Peer {
	return peer{relay: &s.relay, EgressPolicy: &s.egress}
}

// A peer joins the relay and the egress policy into what the pool's peer
// is: an upstream.Peer that is also an upstream.EgressPolicy.
type peer struct {
	*relay
	upstream.EgressPolicy
}

var _ upstream.EgressPolicy = peer{}

// MCP returns the underlying mcp-go server, for transports and tests.
func (s *Server) MCP() *server.MCPServer { return s.mcp }

// Lookup returns the tool behind a wire name, hidden or not.
func (s *Server) Lookup(wire string) (naming.Tool, bool) { return s.current().names.Lookup(wire) }

// auditHiddenCall records a call to a hidden tool, which mcp-go refuses as
// "tool not found" before any handler runs: the attempt is a decision too.
func (s *Server) auditHiddenCall(ctx context.Context, _ any, method mcp.MCPMethod, message any, err error) {
	if method != mcp.MethodToolsCall || !errors.Is(err, server.ErrToolNotFound) {
		return
	}
	req, ok := message.(*mcp.CallToolRequest)
	if !ok {
		return
	}
	t, ok := s.Lookup(req.Params.Name)
	if !ok {
		return
	}
	c := s.newCall(ctx, t, *req)
	c.verdict = s.review.verdict(t, c.policy.Decide(c.rulesCall()))
	c.grantedBy = audit.GrantedByRule
	s.tel.Decision(c.profile, t.Server, t.Name, c.verdict.Decision)
	if werr := s.audit.Write(ctx, c.decisionEvent()); werr != nil {
		s.tel.AuditWriteFailed()
		s.logger.Error("writing audit event", "tool", t.Canonical, "err", werr)
	}
}

// The principals of requests that carry no token: PrincipalLocal for the
// one client of a stdio server, PrincipalAnonymous for an HTTP listener
// without auth (every client on it is the same principal).
const (
	PrincipalLocal     = "local"
	PrincipalAnonymous = "anonymous"
)
