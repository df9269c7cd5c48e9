package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/spf13/cobra"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/internal/oauth"
	"github.com/mcpwarden/mcpwarden/internal/telemetry"
	"github.com/mcpwarden/mcpwarden/proxy"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

func newServeCmd(g *globals) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve --config FILE [--profile NAME] [--watch]",
		Short: "Run the proxy: connect to the upstream servers and serve clients",
		Long: `serve loads the config, starts or connects to every upstream server, and
serves MCP clients over stdio (listen: stdio, the default) or streamable HTTP
at /mcp (listen: 127.0.0.1:PORT). Logs go to stderr; in stdio mode stdout
carries only the protocol. An upstream that fails to start is reported and
retried in the background; the others are served.

SIGHUP (and, with --watch, any change to the config file) reloads the
config: it is validated whole, a bad one is refused with the reason logged
and the running one kept; a good one is swapped in for the next call.

SIGINT or SIGTERM shuts down: new calls are refused at once, calls in
progress get --shutdown-grace (10s) to finish, then those still running are
cancelled (the upstream is sent notifications/cancelled, the client gets
"mcpwarden is shutting down"), the upstreams are stopped and mcpwarden exits
with status 0. A second SIGINT or SIGTERM ends the grace period at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd.Context(), g, f, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVarP(&f.config, "config", "c", "", "config file (YAML, JSON or TOML)")
	cmd.Flags().BoolVar(&f.watch, "watch", false, "reload the config when its file changes (SIGHUP always reloads)")
	cmd.Flags().DurationVar(&f.shutdownGrace, "shutdown-grace", defaultShutdownGrace, "how long calls in progress may take to finish after SIGINT or SIGTERM before they are cancelled")
	cmd.Flags().StringVar(&f.profile, "profile", "", "client profile for every session (stdio: one client per process); over HTTP the bearer token selects it")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// defaultShutdownGrace is how long calls in progress may take to finish
// after SIGINT or SIGTERM, unless --shutdown-grace says otherwise.
const defaultShutdownGrace = 10 * time.Second

// startupWait bounds how long, after mcpwarden starts, a client request
// that lists the upstreams' tools, resources or prompts waits for those
// still on their first start (see proxy.Options.Starting). initialize is
// answered at once; a server that comes up later adds its tools with
// list_changed. A tools/call of a tool not listed yet waits for it, or
// for every upstream to have started or failed.
const startupWait = 10 * time.Second

// serveFlags are serve's own flags.
type serveFlags struct {
	config, profile string
	watch           bool
	shutdownGrace   time.Duration
}

// serve is the whole serve command: every part is built and validated
// before the first client is served.

func serve(ctx context.Context, g *globals, f serveFlags, stdin io.Reader, stdout, stderr io.Writer) error {
	configPath, profile := f.config, f.profile
	st, err := loadSetup(configPath)
	if err != nil {
		return err
	}
	cfg := st.cfg
	if _, ok := cfg.Profiles[profile]; profile != "" && !ok {
		return &codeError{code: exitUsage, err: fmt.Errorf("--profile %q: no such profile in %s (profiles: %v)", profile, configPath, slices.Sorted(maps.Keys(cfg.Profiles)))}
	}
	logger, _, err := st.logger(stderr, g, "info")
	if err != nil {
		return err
	}
	auditCfg := cfg.Audit
	if auditCfg.Path != "" && !filepath.IsAbs(auditCfg.Path) {
		auditCfg.Path = filepath.Join(cfg.Dir, auditCfg.Path)
	}
	auditLog, err := audit.Open(auditCfg, &audit.Options{Stderr: stderr})
	if err != nil {
		return fmt.Errorf("opening audit log: %w", err)
	}
	defer auditLog.Close()

	var identity proxy.Identity
	principal := proxy.PrincipalLocal
	if cfg.Listen != "" && cfg.Listen != config.ListenStdio {
		if identity, err = httpIdentity(cfg, logger); err != nil {
			return &codeError{code: exitUsage, err: err}
		}
		principal = proxy.PrincipalAnonymous
	}

	pinning, err := st.pinning()
	if err != nil {
		return &codeError{code: exitUsage, err: err}
	}
	tel, stopTelemetry, err := startTelemetry(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer stopTelemetry() // after the upstreams are closed: the last spans are flushed
	var headerFunc func(context.Context) map[string]string
	if tel != nil {
		headerFunc = tel.Headers
	}
	// Upstream events may come before the proxy exists (the first connects)
	// and at any time after (restarts, tool changes): they are audited, and
	// passed on once the proxy is there.
	var target atomic.Pointer[proxy.Server]
	onEvent := func(e upstream.Event) {
		if !writeUpstreamEvent(ctx, auditLog, logger, e) {
			tel.AuditWriteFailed()
		}
		recordUpstreamEvent(tel, e)
		if srv := target.Load(); srv != nil && (e.Kind == upstream.EventConnected || e.Kind == upstream.EventRestarted || e.Kind == upstream.EventToolsChanged || e.Kind == upstream.EventReinitialized && e.ToolsChanged) {
			srv.UpstreamChanged(ctx, e.Server)
		}
	}
	var peer proxy.PeerSlot
	st.peer = &peer
	// The upstreams start in the background: serving does not wait for the
	// slowest of them (startupWait bounds how long requests do).
	st.background = true
	startupDeadline := time.Now().Add(startupWait)
	// A SIGTERM does not cut their first attempts: calls may be waiting for
	// them, and Close stops them.
	pool := st.startUpstreamsWith(context.WithoutCancel(ctx), logger, onEvent, headerFunc)
	defer func() {
		if err := pool.Close(); err != nil {
			logger.Warn("closing upstreams", "err", err)
		}
	}()

	resolvers, stopResolvers, err := startResolvers(ctx, cfg, stderr, logger)
	if err != nil {
		return err
	}
	defer stopResolvers()

	changes := pool.Changes() // proxy.New reads every server's state as of now, or later
	srv, err := proxy.New(proxy.Options{
		Upstream:        pool,
		Policy:          st.policy,
		Audit:           auditLog,
		Logger:          logger,
		Naming:          st.naming(),
		Pinning:         pinning,
		SamplingDenied:  st.samplingDenied(),
		ResolveSymlinks: st.resolveSymlinks(),
		Profile:         profile,
		Principal:       principal,
		Version:         version(),
		AskTimeout:      cfg.Ask.Timeout,
		Resolvers:       resolvers,
		Telemetry:       tel,
		// ask.elicitation: false skips elicitation; unset asks as usual.
		SkipElicitation: cfg.Ask.Elicitation != nil && !*cfg.Ask.Elicitation,
		// max_inflight_mb bounds the bytes held by calls in flight.
		MaxInflightBytes: int64(cfg.MaxInflightMB) << 20,
		Starting:         pool.WaitStarted,
		StartupDeadline:  startupDeadline,
	})
	if err != nil {
		return &codeError{code: exitUsage, err: fmt.Errorf("config %s: %w", configPath, err)}
	}
	defer srv.Close()
	target.Store(srv)
	peer.Set(srv)
	if pool.Changes() != changes { // some event came before the proxy could take it
		for _, name := range pool.Names() {
			srv.UpstreamChanged(ctx, name)
		}
	}

	r := &reloader{path: configPath, logger: logger, pool: pool, srv: srv, headerFunc: headerFunc, current: st}
	var watching sync.WaitGroup
	watchCtx, stopWatching := context.WithCancel(ctx)
	defer func() { stopWatching(); watching.Wait() }()
	watching.Go(func() {
		if err := r.watch(watchCtx, f.watch); err != nil {
			logger.Error("config reloads are off", "err", err)
		}
	})

	// On SIGINT/SIGTERM (ctx ends) new calls are refused, the calls in
	// progress get the grace period to finish and are cancelled at its
	// end, then serving stops; the deferred closes stop the upstreams.
	serveCtx, stopServing := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServing()
	watching.Go(func() {
		select {
		case <-ctx.Done():
			logger.Info("shutting down; a second SIGINT or SIGTERM cancels the calls in progress at once", "grace", f.shutdownGrace)
			grace, cancel := context.WithTimeout(context.Background(), max(f.shutdownGrace, 0))
			again := make(chan os.Signal, 1)
			signal.Notify(again, os.Interrupt, syscall.SIGTERM)
			watching.Go(func() {
				select {
				case <-again:
					logger.Warn("shutting down: second signal, cancelling the calls in progress now")
					cancel()
				case <-grace.Done():
				}
			})
			srv.Drain(grace)
			signal.Stop(again)
			cancel()
			stopServing()
		case <-serveCtx.Done():
		}
	})

	watching.Go(func() { // once the upstreams have started, or startupWait has passed
		wctx, cancel := context.WithDeadline(watchCtx, startupDeadline)
		defer cancel()
		if pool.WaitStarted(wctx) != nil && watchCtx.Err() != nil {
			return
		}
		logSummary(logger, st, pool, profile, auditCfg)
	})
	// Starting (listing every upstream's tools, resources and prompts)
	// leaves garbage behind; hand it back before settling in to serve.
	debug.FreeOSMemory()
	if cfg.Listen == "" || cfg.Listen == config.ListenStdio {
		logger.Info("serving on stdio; upstreams start in the background", "upstreams", len(pool.Names()))
		return srv.ServeStdio(serveCtx, stdin, stdout)
	}
	return srv.ServeHTTP(serveCtx, cfg.Listen, proxy.HTTPOptions{
		Identity: identity,
		Guard: proxy.GuardOptions{
			AllowedHosts:   cfg.HTTP.AllowedHosts,
			AllowedOrigins: cfg.HTTP.AllowedOrigins,
			MaxBodyBytes:   cfg.HTTP.MaxBodyBytes,
		},
		Sessions: proxy.SessionLimits{
			IdleTimeout:     cfg.HTTP.SessionIdleTimeout,
			Max:             cfg.HTTP.MaxSessions,
			MaxPerPrincipal: cfg.HTTP.MaxSessionsPerPrincipal,
		},
	})
}

// logSummary logs, once at start, what is being served: the servers up,
// the tools exposed and hidden (per profile, when there are profiles), the
// listen address and where the audit log goes.
func logSummary(logger *slog.Logger, st *setup, pool *upstream.Pool, profile string, auditCfg audit.Config) {
	var up, down []string
	for _, name := range pool.Names() {
		if pool.Err(name) == nil {
			up = append(up, name)
		} else {
			down = append(down, name)
		}
	}
	profiles := []string{profile}
	if profile == "" && st.cfg.Listen != "" && st.cfg.Listen != config.ListenStdio && len(st.cfg.Profiles) > 0 {
		profiles = slices.Sorted(maps.Keys(st.cfg.Profiles))
	}
	for _, p := range profiles {
		exposed, hidden := 0, 0
		for _, name := range up {
			tools, _ := pool.Tools(name)
			for _, t := range tools {
				if st.policy.Hidden(rules.Call{Profile: p, Server: name, Tool: t.Name}) {
					hidden++
				} else {
					exposed++
				}
			}
		}
		attrs := []any{"tools_exposed", exposed, "tools_hidden", hidden}
		if p != "" {
			attrs = append(attrs, "profile", p)
		}
		logger.Info("policy applied", attrs...)
	}
	where := auditCfg.SinkName()
	if auditCfg.Path != "" {
		where += " " + auditCfg.Path
	}
	listen := st.cfg.Listen
	if listen == "" {
		listen = config.ListenStdio
	}
	logger.Info("mcpwarden ready", "servers_up", up, "servers_down", down, "listen", listen, "audit", where, "policy_sha256", st.policy.SHA256())
}

// httpIdentity reads the HTTP listener's tokens: the global one named by
// auth.bearer_token_env, the profiles' tokens, and OAuth access tokens
// when auth.oauth is set.
func httpIdentity(cfg *config.Config, logger *slog.Logger) (proxy.Identity, error) {
	var id proxy.Identity
	if env := cfg.Auth.BearerTokenEnv; env != "" {
		if id.Token = os.Getenv(env); id.Token == "" {
			return id, fmt.Errorf("auth.bearer_token_env: environment variable %s is empty or not set", env)
		}
	}
	profiles, err := cfg.ProfileTokens(os.Getenv)
	if err != nil {
		return id, err
	}
	id.Profiles = profiles
	if o := cfg.Auth.OAuth; o != nil {
		v, err := oauth.New(*o, &oauth.Options{})
		if err != nil {
			return id, fmt.Errorf("auth.oauth: %w", err)
		}
		m, err := cfg.ProfileMatcher()
		if err != nil {
			return id, err
		}
		id.OAuth = oauth.Guard{Verifier: v, Matcher: m, Log: logger}
	}
	return id, nil
}

// writeUpstreamEvent audits and logs e; it reports whether the audit
// event was written.
func writeUpstreamEvent(ctx context.Context, log *audit.Log, logger *slog.Logger, e upstream.Event) (written bool) {
	ev := audit.Event{Event: audit.KindUpstream, Server: e.Server, Detail: e.Kind.String()}
	if e.Err != nil {
		ev.Error = e.Err.Error()
	}
	written = true
	if werr := log.Write(ctx, ev); werr != nil {
		logger.Error("writing audit event", "err", werr)
		written = false
	}
	switch e.Kind {
	case upstream.EventFailed:
		if e.Attempt == 2 { // the first attempt; the pool logs every one
			logger.Error("upstream failed to start; retrying in the background, its tools appear when it is up", "server", e.Server, "err", e.Err)
		}
	case upstream.EventLost:
		logger.Warn("upstream lost; restarting", "server", e.Server, "err", e.Err)
	case upstream.EventRestarted:
		logger.Info("upstream restarted", "server", e.Server, "tools_changed", e.ToolsChanged)
	case upstream.EventReinitialized:
		logger.Info("upstream session re-initialized after the upstream forgot it", "server", e.Server, "tools_changed", e.ToolsChanged)
	}
	return written
}

// recordUpstreamEvent passes e on to the upstream metrics: whether the
// server is up, its restarts, and the tools that get their own label.
func recordUpstreamEvent(tel *telemetry.Telemetry, e upstream.Event) {
	switch e.Kind {
	case upstream.EventConnected, upstream.EventRestarted:
		tel.UpstreamUp(e.Server, true)
		tel.SetKnownTools(e.Server, toolNames(e.Tools))
		if e.Kind == upstream.EventRestarted {
			tel.UpstreamRestarted(e.Server)
		}
	case upstream.EventFailed, upstream.EventLost:
		tel.UpstreamUp(e.Server, false)
	case upstream.EventToolsChanged, upstream.EventReinitialized:
		tel.SetKnownTools(e.Server, toolNames(e.Tools))
	}
}

func toolNames(tools []mcp.Tool) []string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return names
}

// telemetryShutdownTimeout bounds flushing the last spans at exit.
const telemetryShutdownTimeout = 5 * time.Second

// startTelemetry builds the metrics and tracing the config turns on and
// serves the metrics endpoint in a goroutine until stop is called. Without
// metrics or tracing keys it returns a nil Telemetry, which records
// nothing. stop, which must be called, ends the endpoint, waits for its
// goroutine and flushes the spans not yet exported, within
// telemetryShutdownTimeout.
func startTelemetry(ctx context.Context, cfg *config.Config, logger *slog.Logger) (tel *telemetry.Telemetry, stop func(), err error) {
	if !cfg.Telemetry.Enabled() {
		return nil, func() {}, nil
	}
	tel, err = telemetry.New(telemetry.Options{
		Config:         cfg.Telemetry,
		Servers:        cfg.ServerNames(),
		Profiles:       slices.Sorted(maps.Keys(cfg.Profiles)),
		ServiceVersion: version(),
		Logger:         logger,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("starting telemetry: %w", err)
	}
	serveCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := tel.Serve(serveCtx); err != nil {
			logger.Error("metrics endpoint stopped", "err", err)
		}
	}()
	stop = func() {
		cancel()
		<-done
		shutdown, cancelShutdown := context.WithTimeout(context.WithoutCancel(ctx), telemetryShutdownTimeout)
		defer cancelShutdown()
		if err := tel.Shutdown(shutdown); err != nil {
			logger.Warn("shutting down telemetry", "err", err)
		}
	}
	return tel, stop, nil
}

func first(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
