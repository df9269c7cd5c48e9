// Package streamable is mcpwarden's streamable HTTP transport: the
// listener, its guard (package httpguard), the session table (package
// sessiontable) with the sessions' owners, caps, reaping and, with shared
// state, their records and the relay of answers between replicas, in
// front of mcp-go's MCPServer. It knows nothing of policy: proxy gives it
// a Host and runs it (proxy.Server.ListenAndServe).
//
// The POSTs that carry a session's requests are served here (see front):
// a request (a method and an id) on a session this listener initialized,
// on a protocol before 2026-07-28, is decoded only for its head, handled
// on the goroutine serving the HTTP request by the Host's Calls when it is
// a tools/call they take (the client's notifications/cancelled, posted on
// the same session, cancels it) and by MCPServer.HandleMessage otherwise,
// and answered as mcp-go's streamable HTTP server answers it — JSON, or
// an event stream carrying the notifications and elicitations the server
// sent while serving it, then the response; the client's answers to
// those elicitations are delivered here too. Everything else is still
// served by mcp-go's StreamableHTTPServer: initialize, notifications,
// the client's answers to sampling and roots requests (which mcp-go
// sends on the GET stream), empty answers, GET streams and their
// resumption, DELETE, every request of protocol 2026-07-28 or later, the
// requests of a session adopted from another replica, and every POST
// mcp-go would refuse (a body that is not one JSON-RPC object, the wrong
// Content-Type, an unknown protocol version, a session that is not
// valid), so that the refusal is mcp-go's. Three things differ from
// mcp-go's server for the requests served here: mcp-go gives
// HandleMessage the request's HTTP headers in a context key of its own,
// which only its log line (mcp.request's mcp.protocol.version) and
// CallToolRequest.Header read, and neither has them here; mcp-go answers
// every request of a session with an event stream once the session was
// ever sent a notification (a broadcast such as tools/list_changed
// included), where a response here is an event stream only when its own
// request sent something; and the elicitations sent here are numbered
// from 2^32 (firstRequestID), apart from mcp-go's own requests.
package streamable

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/hostport"
	"github.com/mcpwarden/mcpwarden/internal/httpserve"
	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/telemetry"
	"github.com/mcpwarden/mcpwarden/proxy/httpguard"
	"github.com/mcpwarden/mcpwarden/proxy/sessiontable"
	"github.com/mcpwarden/mcpwarden/proxy/wire"
)

// EndpointPath is where the streamable HTTP endpoint is served.
const EndpointPath = "/mcp"

// A Host is what the transport needs of the server it serves: mcp-go's
// MCPServer, who a request comes from, and where a refusal is recorded.
// MCP, Logger, Budget, PrincipalOf, ProfileOf and Audit are required;
// Telemetry may be nil (nothing is counted), State nil (the sessions
// live in this process only) and Calls nil (HandleMessage serves every
// request).
type Host struct {
	MCP       *server.MCPServer
	Calls     wire.CallServer
	Logger    *slog.Logger
	Telemetry *telemetry.Telemetry
	State     state.Store
	Budget    *wire.Budget
	// PrincipalOf and ProfileOf name who a request's context comes from
	// and the profile it runs under.
	PrincipalOf func(ctx context.Context) string
	ProfileOf   func(ctx context.Context) string
	// Audit records a refusal of the transport's own (a session named by
	// another principal).
	Audit func(ctx context.Context, e audit.Event)
}

// Options configure the streamable HTTP listener. The zero value
// serves without a token, accepts only localhost Host and Origin values
// (and the listen host) and caps bodies at httpguard.DefaultMaxBodyBytes.
type Options struct {
	// Identity says which bearer tokens are accepted; the zero value asks
	// for none.
	Identity httpguard.Identity
	// Guard holds the Host and Origin allowlists and the body limit.
	// ListenAndServe adds the host it listens on (unless it is an unspecified
	// address such as 0.0.0.0) to Guard.AllowedHosts.
	Guard httpguard.Options
	// Sessions bound the sessions: their idle timeout and how many may be
	// live; the zero value means the defaults.
	Sessions sessiontable.Limits
	// Ready, when set, receives the bound address once the listener is up.
	Ready func(addr net.Addr)
}

// Limits of the HTTP server. There is deliberately no WriteTimeout: it
// spans the whole response, so it would cut the long-lived SSE streams of
// streamable HTTP (a GET listening stream; a POST that waits on an ask for
// a minute or more). ReadTimeout spans only reading the request, headers
// and body, which happens before the response starts (mcp-go and the guard
// read the body up front), so it stops a client trickling a request
// without touching streams; a test checks that. IdleTimeout closes
// keep-alive connections that carry no request.
const (
	httpReadHeaderTimeout = 10 * time.Second
	httpReadTimeout       = 30 * time.Second
	httpIdleTimeout       = 2 * time.Minute
	httpMaxHeaderBytes    = 64 << 10
)

// NewServer returns the http.Server ListenAndServe runs, with the limits
// above, serving h and logging its errors to logger.
func NewServer(h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: httpReadHeaderTimeout,
		ReadTimeout:       httpReadTimeout,
		IdleTimeout:       httpIdleTimeout,
		MaxHeaderBytes:    httpMaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// ListenAndServe serves streamable HTTP at EndpointPath on addr until ctx is
// done, then shuts down, giving requests in flight a few seconds. Sessions
// are stateful: initialize issues an Mcp-Session-Id, DELETE or the idle
// timeout ends the session, and a later request naming it gets 404.
func ListenAndServe(ctx context.Context, h Host, addr string, o Options) error {
	handler, sessions, err := NewHandler(h, addr, o)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	srv := NewServer(handler, h.Logger)
	if o.Ready != nil {
		o.Ready(ln.Addr())
	}
	h.Logger.Info("serving streamable HTTP", "url", "http://"+ln.Addr().String()+EndpointPath)

	reapCtx, stopReaping := context.WithCancel(ctx)
	reaped := make(chan struct{})
	go func() {
		defer close(reaped)
		sessions.Reap(reapCtx)
	}()
	defer func() { stopReaping(); <-reaped }()

	served, err := httpserve.Run(ctx, srv, ln, httpShutdownTimeout, sessions.stream.CloseSessions)
	if served != nil {
		return fmt.Errorf("serving HTTP: %w", served)
	}
	if err != nil {
		// Requests still running past the timeout (a client that never
		// reads its response) are cut: stopping is what was asked.
		h.Logger.Warn("shutting down HTTP: closing the connections still open", "err", err)
		_ = srv.Close()
	}
	return nil
}

// httpShutdownTimeout bounds the wait for responses still being written
// once serving stops; the calls behind them were drained (see proxy.Server.Drain).
const httpShutdownTimeout = 5 * time.Second

// NewHandler builds the listener's handler: the guard (Host, Origin,
// token, body), then the session check, then the front at EndpointPath
// (which serves a session's requests itself and the rest through mcp-go's
// streamable HTTP server), which carries the profile a token selected
// into each MCP request's context. mcp-go's own DNS-rebinding check is turned
// off because the guard replaces it: mcp-go checks Host only on loopback
// connections and knows no allowlist; the guard checks Host and Origin on
// every connection.
func NewHandler(h Host, addr string, o Options) (http.Handler, *Sessions, error) {
	g := o.Guard
	if host, _, err := net.SplitHostPort(addr); err == nil {
		if entry, ok := hostport.ListenHost(host); ok {
			g.AllowedHosts = append(slices.Clip(g.AllowedHosts), entry)
		} else if len(g.AllowedHosts) == 0 {
			h.Logger.Warn("listening on every interface, but only the localhost names are accepted as Host; list the names clients use in http.allowed_hosts", "listen", addr)
		}
	}
	ids := sessiontable.New(o.Sessions)
	sessions := &Sessions{ids: ids, logger: h.Logger, tel: h.Telemetry, principalOf: h.PrincipalOf, profileOf: h.ProfileOf, audit: h.Audit}
	sessions.peers = peeringOf(sessions, h.State)
	httpContext := func(ctx context.Context, r *http.Request) context.Context {
		// The profile a token selected, and the trace context the client
		// sent in its headers (params._meta takes precedence). A session
		// initialized on another replica gets what its initialize told
		// (see restore).
		noteIssuing(ctx)
		sessions.restore(ctx)
		return h.Telemetry.HTTPContext(httpguard.HTTPContext(ctx, r), r)
	}
	sessions.stream = server.NewStreamableHTTPServer(h.MCP,
		server.WithEndpointPath(EndpointPath),
		server.WithStreamableHTTPLogger(h.Logger),
		server.WithSessionIdManager(ids),
		server.WithDisableLocalhostProtection(true),
		server.WithHTTPContextFunc(httpContext),
	)
	sessions.front = newFront(h, sessions.stream, ids, httpContext)
	mux := http.NewServeMux()
	mux.Handle(EndpointPath, sessions.guard(sessions.front))
	handler, err := httpguard.New(g, o.Identity, h.Budget.CountBodies(mux))
	if err != nil {
		return nil, nil, fmt.Errorf("http: %w", err)
	}
	return handler, sessions, nil
}
