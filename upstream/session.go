package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcpwarden/mcpwarden/upstream/internal/h1"
)

// A session is one connection to an upstream: one child process for a
// stdio server. It is lost once, and never comes back: the server's
// supervisor replaces it with a new one.
type session struct {
	client *client.Client
	proc   *process      // nil for a remote server
	conns  *h1.Transport // a remote server's connections; nil for stdio
	info   mcp.Implementation
	// protocol is the version the session speaks (see Pool.Protocol).
	protocol string
	probe    *eraProbe // a streamable HTTP session opened by asking server/discover first; else nil
	// listening is what a 2026-07-28 session's subscriptions/listen
	// stream is open for; nil if it does not listen (see listen).
	listening *listener
	tools     []mcp.Tool
	life      context.Context    // the session's context, ended by stop
	cancel    context.CancelFunc // ends life

	lostOnce sync.Once
	lost     chan struct{} // closed by markLost
	lostErr  error         // set before lost is closed

	inflight atomic.Int64 // calls sent on the session and not yet answered
	callIDs  atomic.Int64 // numbers the calls sendCall sends

	wg       sync.WaitGroup // the exit watcher
	stopOnce sync.Once
	stopErr  error
}

// mcpwarden is a client of both protocol generations, choosing per
// upstream and per session. One upstream session serves every client, and
// most clients are of the initialize handshake (2025-11-25 and older): on
// it a server may ask the client for sampling or elicitation in the middle
// of a call, or outside any, where on 2026-07-28 a server that speaks both
// refuses such requests (the conformance suite's reference server does).
// So the handshake is preferred whenever the upstream speaks it, and
// 2026-07-28 is spoken to an upstream that speaks only that:
//   - a streamable HTTP upstream is first asked server/discover (see
//     eraProbe): if it lists only 2026-07-28 and later, that session is
//     kept, and no request of the handshake is ever sent to it (a server of
//     2026-07-28 that still answers initialize would otherwise be spoken to
//     without the per-request _meta and headers it needs); if it lists an
//     older version too, or refuses server/discover, it is dialled again,
//     afresh, with the handshake;
//   - any other upstream is opened with the handshake, and only one that
//     refuses it is dialled again with server/discover.
// See Pool.Protocol.

// An eraProbe is what the first, server/discover, request to a streamable
// HTTP upstream found out: whether the upstream also speaks the handshake.
// While a session probes, its transport refuses to send initialize (mcp-go's
// client falls back to it when server/discover fails), so the handshake is
// opened on a session of its own, with its GET stream.
type eraProbe struct {
	mu         sync.Mutex
	modernOnly bool // server/discover listed versions, all of 2026-07-28 or later
	refused    bool // the upstream refused the version asked for with 2026-07-28's error, naming one of 2026-07-28 or later
}

// errSpeaksHandshake is why a probing session was given up: the upstream
// speaks the initialize handshake.
var errSpeaksHandshake = errors.New("the upstream speaks the initialize handshake")

// errDiscoverRefused is why a probing session was given up: the upstream
// refused server/discover's protocol version in the terms of 2026-07-28.
var errDiscoverRefused = errors.New("the upstream refused server/discover's protocol version")

// note records the supported versions of a server/discover result. An
// answer that lists none is not taken for 2026-07-28's (a server of the
// handshake may answer any method it does not know with an empty result).
func (p *eraProbe) note(result json.RawMessage) {
	var r struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	if json.Unmarshal(result, &r) != nil {
		return
	}
	modernOnly := len(r.SupportedVersions) > 0
	for _, v := range r.SupportedVersions {
		modernOnly = modernOnly && mcp.IsModernProtocol(v)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.modernOnly = modernOnly
}

// noteRefusal records server/discover refused with the error of an
// unsupported protocol version, whose data lists the versions the upstream
// supports.
func (p *eraProbe) noteRefusal(data any) {
	b, err := json.Marshal(data)
	if err != nil {
		return
	}
	var d mcp.UnsupportedProtocolVersionData
	if json.Unmarshal(b, &d) != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, v := range d.Supported {
		if mcp.IsModernProtocol(v) {
			p.refused = true
		}
	}
}

// refusedModern reports whether the upstream refused server/discover in
// the terms of 2026-07-28 (an upstream that is not of that generation
// knows no server/discover to refuse that way), so it is to be asked
// again rather than opened with the handshake.
func (p *eraProbe) refusedModern() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}

// speaksHandshake reports whether the upstream is to be opened with the
// handshake: its server/discover answer did not list 2026-07-28 alone.
func (p *eraProbe) speaksHandshake() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.modernOnly
}

// A generation is how dialGeneration opens a session.
type generation int

const (
	genHandshake generation = iota // the initialize handshake only
	genDiscover                    // server/discover, with mcp-go's fallback to the handshake
	genProbe                       // server/discover, kept only for an upstream of 2026-07-28 alone (see eraProbe)
)

// errHandshakeRefused is why a session of the initialize handshake could
// not be opened with a server that answered: it refused initialize.
var errHandshakeRefused = errors.New("the upstream refused the initialize handshake")

// refusesHandshake reports whether err, from initialize, is the server
// refusing the handshake itself (HTTP 4xx, method not found, invalid
// request, no version in common) rather than failing to answer.
func refusesHandshake(err error) bool {
	var version mcp.UnsupportedProtocolVersionError
	return errors.Is(err, transport.ErrLegacySSEServer) || errors.Is(err, mcp.ErrMethodNotFound) ||
		errors.Is(err, mcp.ErrInvalidRequest) || errors.As(err, &version)
}

// dial connects to the upstream spec describes: it starts or dials it,
// initializes the session and lists all its tools, within the init
// timeout, in the generation the upstream speaks (see above). onNotify
// gets the upstream's notifications (from the transport's reader: it must
// not block). The session's background work is bound to life, not to the
// init timeout.
func dial(ctx context.Context, spec Spec, info mcp.Implementation, logger *slog.Logger, sp *spawner, onNotify func(mcp.JSONRPCNotification), opts ...client.ClientOption) (*session, error) {
	ctx, cancel := context.WithTimeout(ctx, spec.initTimeout())
	defer cancel()
	if spec.Transport == TransportHTTP {
		s, err := dialGeneration(ctx, spec, genProbe, info, logger, sp, onNotify, opts...)
		if errors.Is(err, errDiscoverRefused) {
			logger.Info("the upstream refused the protocol version of server/discover; asking it again", "err", err)
			return dialGeneration(ctx, spec, genDiscover, info, logger, sp, onNotify, opts...)
		}
		if !errors.Is(err, errSpeaksHandshake) {
			return s, err
		}
	}
	s, err := dialGeneration(ctx, spec, genHandshake, info, logger, sp, onNotify, opts...)
	if !errors.Is(err, errHandshakeRefused) {
		return s, err
	}
	logger.Info("the upstream refused the initialize handshake; trying protocol 2026-07-28 (server/discover)", "err", err)
	return dialGeneration(ctx, spec, genDiscover, info, logger, sp, onNotify, opts...)
}

// dialGeneration is dial in one generation.
func dialGeneration(ctx context.Context, spec Spec, gen generation, info mcp.Implementation, logger *slog.Logger, sp *spawner, onNotify func(mcp.JSONRPCNotification), opts ...client.ClientOption) (*session, error) {
	timeout := spec.initTimeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	legacy := gen == genHandshake
	s := &session{lost: make(chan struct{})}
	if gen == genProbe {
		s.probe = &eraProbe{}
	}
	t, err := s.newTransport(ctx, spec, legacy, logger, sp)
	if err != nil {
		return nil, err
	}
	if legacy {
		opts = append([]client.ClientOption{client.WithLegacyProtocolOnly()}, opts...)
	}
	s.client = client.NewClient(t, opts...)
	s.client.OnNotification(onNotify)
	s.client.OnConnectionLost(func(err error) {
		if errors.Is(err, transport.ErrSessionTerminated) { // HTTP 404: not a crash
			s.markLost(fmt.Errorf("%w: %w", errSessionExpired, err))
			return
		}
		s.markLost(fmt.Errorf("connection lost: %w", err))
	})
	fail := func(step string, err error) error {
		if loginRequired(err) {
			s.stop()
			if errors.Is(err, ErrLoginRequired) { // an InsufficientScopeError: keep the scope
				return fmt.Errorf("%s: %w", step, err)
			}
			return fmt.Errorf("%s: %w", step, ErrLoginRequired)
		}
		msg := fmt.Sprintf("%s: %v", step, err)
		if errors.Is(err, context.DeadlineExceeded) {
			msg += fmt.Sprintf(" (no answer within init_timeout %s)", timeout)
		}
		if s.proc != nil {
			// Unless it is hanging, the child is likely exiting: its exit
			// status and stderr say more than a closed or broken pipe.
			if s.proc.hasExited(!errors.Is(err, context.DeadlineExceeded)) {
				msg += "; " + s.proc.exitError().Error()
			} else {
				msg += s.proc.stderrTail()
			}
		}
		s.stop()
		return errors.New(msg)
	}
	if s.proc != nil {
		s.wg.Go(func() {
			<-s.proc.exited
			s.markLost(s.proc.exitError())
		})
	}
	// The session outlives this call: it runs under its own context, ended
	// by stop. Starting is still bounded by the init timeout.
	life, cancelLife := context.WithCancel(context.WithoutCancel(ctx))
	s.life, s.cancel = life, cancelLife
	stopWatch := context.AfterFunc(ctx, cancelLife)
	err = s.client.Start(life)
	if !stopWatch() {
		err = errors.Join(err, ctx.Err())
	}
	if err != nil {
		return nil, fail("starting", err)
	}
	init, err := s.client.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: info}})
	switch {
	case err == nil && s.probe != nil && s.probe.speaksHandshake():
		s.stop()
		return nil, errSpeaksHandshake
	case err == nil:
	case s.probe != nil && errors.Is(err, errSpeaksHandshake):
		s.stop()
		if s.probe.refusedModern() {
			return nil, errDiscoverRefused
		}
		return nil, err
	case legacy && refusesHandshake(err):
		s.stop()
		return nil, fmt.Errorf("%w: %w", errHandshakeRefused, err)
	case errors.Is(err, transport.ErrLegacySSEServer):
		// mcp-go's guess; by then server/discover had failed too.
		return nil, fail("initializing", errNoStreamableEndpoint)
	default:
		return nil, fail("initializing", err)
	}
	s.info, s.protocol = init.ServerInfo, init.ProtocolVersion
	s.listen(life, init.Capabilities, logger)
	if init.Capabilities.Tools != nil {
		tools, err := s.listTools(ctx)
		if err != nil {
			return nil, fail("listing tools", err)
		}
		s.tools = tools
	}
	return s, nil
}

// errNoStreamableEndpoint is why a streamable HTTP upstream that refused
// both generations' first request with an HTTP 4xx cannot be reached.
var errNoStreamableEndpoint = errors.New("the URL refused both server/discover (protocol 2026-07-28) and the initialize POST (2025-11-25 and older) with an HTTP 4xx: it is not a streamable HTTP MCP endpoint (check the URL; for a server of the older HTTP+SSE transport, write transport: sse)")

// callTool sends a tools/call on the session, its result taken raw into
// *raw, counted in inflight while it runs: past mcp-go's client on a
// session of the handshake (sendCall), through it on one of 2026-07-28,
// whose requests it completes and whose input requests it may fulfil.
func (s *session) callTool(ctx context.Context, raw *json.RawMessage, params mcp.CallToolParams) error {
	s.inflight.Add(1)
	defer s.inflight.Add(-1)
	if !mcp.IsModernProtocol(s.protocol) {
		return s.sendCall(ctx, raw, params)
	}
	_, err := s.client.CallTool(withRawResult(ctx, raw), mcp.CallToolRequest{Params: params})
	return err
}

// listTools lists all the upstream's tools, following pagination.
// Each tool's schemas are the upstream's own JSON (see withRawSchemas).
func (s *session) listTools(ctx context.Context) ([]mcp.Tool, error) {
	pages := &listPages{}
	res, err := s.client.ListTools(withListPages(ctx, pages), mcp.ListToolsRequest{})
	if err != nil {
		return nil, err
	}
	if res.Tools == nil {
		return []mcp.Tool{}, nil
	}
	raw := pages.schemas()
	for i, t := range res.Tools {
		res.Tools[i] = withRawSchemas(t, raw[t.Name])
	}
	return res.Tools, nil
}

// newTransport builds the transport for spec without starting it. For a
// stdio server it starts the child through sp (the transport only frames
// messages on its pipes) and sets s.proc.
func (s *session) newTransport(ctx context.Context, spec Spec, legacy bool, logger *slog.Logger, sp *spawner) (transport.Interface, error) {
	switch spec.Transport {
	case TransportStdio:
		proc, err := startProcess(ctx, spec, logger, sp)
		if err != nil {
			return nil, fmt.Errorf("starting: %w", err)
		}
		s.proc = proc
		results := newResultStash()
		t := transport.NewIO(newLineLimiter(proc.stdout, spec.maxResultBytes(), false, results), proc.stdin, nil)
		transport.WithCommandLogger(slog.New(closedWriteHandler{logger.Handler()}))(t)
		return rawStdio{Stdio: t, results: results, stdin: proc.stdin}, nil
	case TransportHTTP:
		hc := withStepUps(spec, s.httpClient(spec, logger, true))
		calls := callsOf(spec, hc)
		hc.Transport = prefetchTransport{hc.Transport} // see sendOverHTTP
		oauth, err := httpOAuthOptions(ctx, spec, hc)
		if err != nil {
			return nil, err
		}
		topts := append([]transport.StreamableHTTPCOption{
			transport.WithHTTPHeaders(spec.Headers),
			transport.WithHTTPHeaderFunc(spec.HeaderFunc), // nil adds none
			transport.WithHTTPBasicClient(hc),
			transport.WithHTTPLogger(logger)}, oauth...)
		if legacy {
			// The standalone GET stream carries what a server of the
			// handshake sends outside any request: elicitation,
			// sampling and roots requests, tools/list_changed,
			// resources/updated, log messages. When it breaks it is
			// resumed from the last event id (see resumingTransport);
			// it is reopened afresh when it cannot be, and after a new
			// session. (2026-07-28 has no such stream: see
			// session.listen.)
			topts = append(topts, transport.WithContinuousListening())
		}
		t, err := transport.NewStreamableHTTP(spec.URL, topts...)
		if err != nil {
			return nil, err
		}
		return rawStreamableHTTP{t, s.probe, calls}, nil
	case TransportSSE:
		oauth, err := sseOAuthOptions(ctx, spec)
		if err != nil {
			return nil, err
		}
		t, err := transport.NewSSE(spec.URL, append([]transport.ClientOption{
			transport.WithHeaders(spec.Headers),
			transport.WithHeaderFunc(spec.HeaderFunc), // nil adds none
			transport.WithHTTPClient(withStepUps(spec, s.httpClient(spec, logger, false))),
			// Its own default of 60 s would cut calls short of call_timeout.
			transport.WithResponseTimeout(spec.callTimeout()),
			transport.WithSSELogger(logger)}, oauth...)...)
		if err != nil {
			return nil, err
		}
		return rawSSE{t}, nil
	default:
		return nil, fmt.Errorf("unknown transport %v", spec.Transport)
	}
}

// httpClient is the HTTP client of a remote server's session. The session
// has its own connections, and keeps enough of them open for the calls it
// may have in flight, its listening stream and requests other than
// tools/call: http.DefaultTransport keeps two per host, and opening a
// connection per call costs more than the call. Plain http:// requests
// are sent on the caller's goroutine (h1.Transport); https and proxied
// ones by net/http's Transport. Every response body is
// capped at MaxResultBytes. With resume (streamable HTTP), event streams
// that break are resumed below the cap, which sees one stream.
func (s *session) httpClient(spec Spec, logger *slog.Logger, resume bool) *http.Client {
	fallback := http.DefaultTransport.(*http.Transport).Clone()
	fallback.MaxIdleConnsPerHost = spec.maxConcurrentCalls() + 4
	s.conns = &h1.Transport{Fallback: fallback, MaxIdleConnsPerHost: fallback.MaxIdleConnsPerHost}
	var base http.RoundTripper = s.conns
	if resume {
		base = &resumingTransport{base: s.conns, logger: logger}
	}
	return &http.Client{Transport: &limitTransport{base: base, max: spec.maxResultBytes()}}
}

// markLost records why the session ended, the first time it is called.
func (s *session) markLost(err error) {
	s.lostOnce.Do(func() {
		s.lostErr = err
		close(s.lost)
	})
}

// isLost reports whether the session has been lost.
func (s *session) isLost() bool { return isClosed(s.lost) }

// stopGrace is how long a stdio child gets to exit after its stdin is
// closed, and again after SIGTERM.
const stopGrace = 2 * time.Second

// stop ends the session and, for a stdio server, its process group. It is
// idempotent and returns when everything the session started has ended.
func (s *session) stop() error {
	s.stopOnce.Do(func() {
		s.markLost(errors.New("closed"))
		if s.client != nil {
			s.stopErr = s.client.Close()
		}
		if s.cancel != nil {
			s.cancel()
		}
		if s.proc != nil {
			s.proc.stop(stopGrace)
			s.stopErr = nil // the child's stdin was closed twice, or it was signalled: not news
		}
		if s.conns != nil {
			s.conns.CloseIdleConnections()
		}
		s.wg.Wait()
	})
	return s.stopErr
}
