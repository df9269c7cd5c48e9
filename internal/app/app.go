package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/telemetry"
	"github.com/mcpwarden/mcpwarden/proxy"
	"github.com/mcpwarden/mcpwarden/proxy/httpguard"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// startupWait bounds how long, after mcpwarden starts, a client request
// that lists the upstreams' tools, resources or prompts waits for those
// still on their first start (see proxy.Options.Starting): the config's
// startup_wait, else config.DefaultStartupWait. initialize is answered at
// once; a server that comes up later adds its tools with list_changed. A
// tools/call of a tool not listed yet waits for it, or for every upstream
// to have started or failed.
func startupWait(cfg *config.Config) time.Duration {
	if cfg.StartupWait > 0 {
		return cfg.StartupWait
	}
	return config.DefaultStartupWait
}

// Options configure an App beyond its Setup.
type Options struct {
	// Logger receives the human log; nil discards.
	Logger *slog.Logger
	// Stderr receives the approvals page's link, which the logger's
	// redaction would hide; nil discards.
	Stderr io.Writer
	// Profile is the client profile of every session without a token
	// (serve --profile); "" means none.
	Profile string
	// Version is mcpwarden's, reported to clients and upstreams.
	Version string
	// Load reads the config again for a reload on SIGHUP or a change of
	// the file (see Serve); nil turns reloads off.
	Load func() (*Setup, error)
	// Watch reloads when the config file changes, not only on SIGHUP.
	Watch bool
	// ShutdownGrace is how long calls in progress may take to finish
	// once Serve's ctx ends.
	ShutdownGrace time.Duration
}

// A ConfigError is an error in the config that Start found: the command
// was used wrongly, not the machine.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// An App is one running mcpwarden: its audit log, telemetry, resolvers of
// asks, upstream pool and proxy, built and wired once by Start.
type App struct {
	o          Options
	logger     *slog.Logger
	audit      *audit.Log
	auditCfg   audit.Config // with its path made absolute
	tel        *telemetry.Telemetry
	headerFunc func(context.Context) map[string]string
	pool       *upstream.Pool
	srv        *proxy.Server
	state      state.Store // config state:; nil keeps everything in this process
	identity   httpguard.Identity
	startBy    time.Time // see startupWait
	closers    []func()  // run by Close, last first
	closeOnce  sync.Once
	reloading  sync.Mutex // one reload at a time; guards current
	current    *Setup
	// eventCtx carries Start's values, not its end, to the handling of
	// upstream events, which come for as long as the pool runs.
	eventCtx context.Context
}

// Start builds every part of mcpwarden from st and starts it: the audit
// log, the telemetry, the resolvers of asks (the approvals page), the
// upstream pool and the proxy. The pool is built first, the proxy on it,
// and only then are the upstreams started, in the background, with the
// proxy as their peer and the App hearing their events: nothing an
// upstream says can come before the proxy exists. ctx bounds start-up
// and is the parent of the telemetry and approvals page, which run until
// Close. An error wrapped in a *ConfigError is the config's fault. On
// error, what was started is stopped.
func Start(ctx context.Context, st *Setup, o Options) (_ *App, err error) {
	cfg := st.Config
	a := &App{o: o, logger: o.Logger, current: st, startBy: time.Now().Add(startupWait(cfg))}
	if a.logger == nil {
		a.logger = slog.New(slog.DiscardHandler)
	}
	if a.o.Stderr == nil {
		a.o.Stderr = io.Discard
	}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	a.auditCfg = cfg.Audit
	if a.auditCfg.Path != "" && !filepath.IsAbs(a.auditCfg.Path) {
		a.auditCfg.Path = filepath.Join(cfg.Dir, a.auditCfg.Path)
	}
	if w := cfg.AuditWitnessPath(); w != "" {
		a.auditCfg.Witness = w
	}
	aopts := &audit.Options{Stderr: a.o.Stderr, Replica: cfg.ReplicaID()}
	key, err := AuditSigningKey(cfg, os.Getenv)
	if err != nil {
		return nil, &ConfigError{fmt.Errorf("audit checkpoints: %w (or turn them off with audit.unsigned: true)", err)}
	}
	if key != nil {
		aopts.Signer = key.Signer
	}
	if a.audit, err = audit.Open(a.auditCfg, aopts); err != nil {
		return nil, fmt.Errorf("opening audit log: %w", err)
	}
	a.closers = append(a.closers, func() { a.audit.Close() })

	principal := proxy.PrincipalLocal
	if cfg.Listen != "" && cfg.Listen != config.ListenStdio {
		if a.identity, err = httpIdentity(cfg, a.logger); err != nil {
			return nil, &ConfigError{err}
		}
		principal = proxy.PrincipalAnonymous
	}
	pinning, err := st.Pinning()
	if err != nil {
		return nil, &ConfigError{err}
	}
	// The state's metrics exist before the state, which the telemetry's
	// readiness checks.
	stateMetrics := telemetry.NewStateMetrics()
	if a.state, err = openState(ctx, cfg, stateMetrics); err != nil {
		return nil, err
	}
	if a.state != nil {
		// Closed after everything that uses it (closers run last first).
		a.closers = append(a.closers, func() {
			if err := a.state.Close(); err != nil {
				a.logger.Warn("closing the shared state", "err", err)
			}
		})
	}
	tel, stopTelemetry, err := startTelemetry(ctx, cfg, a.logger, o.Version, stateMetrics, a.readyChecks())
	if err != nil {
		return nil, err
	}
	a.tel = tel
	a.closers = append(a.closers, stopTelemetry) // after the upstreams are closed: the last spans are flushed
	if tel != nil {
		a.headerFunc = tel.Headers
	}
	var sharedAsks state.Asks // a nil Store must stay a nil interface
	if a.state != nil {
		sharedAsks = a.state
	}
	resolvers, stopResolvers, err := startResolvers(ctx, cfg, sharedAsks, a.o.Stderr, a.logger)
	if err != nil {
		return nil, err
	}

	a.eventCtx = context.WithoutCancel(ctx)
	a.pool = upstream.New(st.Specs(a.headerFunc), &upstream.Options{
		Logger:     a.logger,
		ClientInfo: mcp.Implementation{Name: "mcpwarden", Version: o.Version},
		OnEvent:    a.upstreamEvent,
		// The upstreams start in the background: serving does not wait
		// for the slowest of them (startupWait bounds how long requests do).
		Background: true,
	})
	a.closers = append(a.closers, func() {
		if err := a.pool.Close(); err != nil {
			a.logger.Warn("closing upstreams", "err", err)
		}
	})
	a.closers = append(a.closers, stopResolvers)
	a.srv, err = proxy.New(proxy.Options{
		Upstream:   a.pool,
		Policy:     st.Policy,
		Audit:      a.audit,
		Logger:     a.logger,
		Naming:     st.Naming(),
		Pinning:    pinning,
		Servers:    st.ServerOptions(),
		Profile:    o.Profile,
		Principal:  principal,
		Version:    o.Version,
		AskTimeout: cfg.Ask.Timeout,
		Resolvers:  resolvers,
		Telemetry:  tel,
		// ask.elicitation: false skips elicitation; unset asks as usual.
		SkipElicitation: cfg.Ask.Elicitation != nil && !*cfg.Ask.Elicitation,
		// max_inflight_mb bounds the bytes held by calls in flight.
		MaxInflightBytes: int64(cfg.MaxInflightMB) << 20,
		Starting:         a.pool.WaitStarted,
		StartupDeadline:  a.startBy,
		State:            a.state,
	})
	if err != nil {
		return nil, &ConfigError{fmt.Errorf("config %s: %w", cfg.File, err)}
	}
	a.closers = append(a.closers, a.srv.Close)
	// A SIGTERM does not cut the first attempts: calls may be waiting for
	// them, and Close stops them.
	logStarting(a.logger, cfg)
	logShadow(a.logger, st.Policy)
	if w := askWarning(cfg); w != "" {
		a.logger.Warn(w)
	}
	a.pool.Start(context.WithoutCancel(ctx), a.srv.Peer())
	return a, nil
}

// Close stops every part Start started, in the reverse order: the proxy's
// own work, the resolvers, the upstreams, the telemetry (flushing the
// last spans) and the audit log. It is idempotent.
func (a *App) Close() {
	a.closeOnce.Do(func() {
		for _, c := range slices.Backward(a.closers) {
			c()
		}
	})
}
