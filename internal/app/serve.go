package app

import (
	"context"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"syscall"

	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/internal/gcpace"
	"github.com/mcpwarden/mcpwarden/proxy"
	"github.com/mcpwarden/mcpwarden/proxy/httpguard"
	"github.com/mcpwarden/mcpwarden/proxy/sessiontable"
	"github.com/mcpwarden/mcpwarden/proxy/streamable"
)

// Serve serves clients over stdio (in and out) or streamable HTTP, as the
// config's listen says, until ctx ends or, on stdio, in ends. Meanwhile it
// reloads the config on SIGHUP and, with Options.Watch, when its file
// changes, and logs a summary once the upstreams have started. When ctx
// ends (SIGINT, SIGTERM) new calls are refused, the calls in progress get
// Options.ShutdownGrace to finish and are cancelled at its end (a second
// signal ends it at once), then serving stops. Close stops the rest.
func (a *App) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	var watching sync.WaitGroup
	watchCtx, stopWatching := context.WithCancel(ctx)
	defer func() { stopWatching(); watching.Wait() }()
	if a.o.Load != nil {
		watching.Go(func() {
			if err := a.watch(watchCtx); err != nil {
				a.logger.Error("config reloads are off", "err", err)
			}
		})
	}

	serveCtx, stopServing := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServing()
	watching.Go(func() {
		select {
		case <-ctx.Done():
			a.drain(&watching)
			stopServing()
		case <-serveCtx.Done():
		}
	})

	watching.Go(func() { // once the upstreams have started, or startupWait has passed
		wctx, cancel := context.WithDeadline(watchCtx, a.startBy)
		defer cancel()
		if a.pool.WaitStarted(wctx) != nil && watchCtx.Err() != nil {
			return
		}
		a.logSummary()
		// Starting (package init, the config, listing and pinning every
		// upstream's tools, resources and prompts) leaves garbage behind
		// that an idle heap never collects: hand it back once, now that
		// the upstreams have started. Before this point (where it used to
		// be) it ran ahead of the upstreams and missed their share.
		debug.FreeOSMemory()
		// Under load, the collector gets room to run less often (see
		// gcpace); GOGC or GOMEMLIMIT, when set, say otherwise.
		pacer := gcpace.Start(gcpace.DefaultHeadroom, os.Getenv)
		<-watchCtx.Done()
		pacer.Stop()
	})
	cfg := a.setup().Config
	if cfg.Listen == "" || cfg.Listen == config.ListenStdio {
		a.logger.Info("serving on stdio; upstreams start in the background", "upstreams", len(a.pool.Names()))
		return proxy.ServeStdio(serveCtx, a.srv, in, out)
	}
	return proxy.ListenAndServe(serveCtx, a.srv, cfg.Listen, streamable.Options{
		Identity: a.identity,
		Guard: httpguard.Options{
			AllowedHosts:   cfg.HTTP.AllowedHosts,
			AllowedOrigins: cfg.HTTP.AllowedOrigins,
			MaxBodyBytes:   cfg.HTTP.MaxBodyBytes,
		},
		Sessions: sessiontable.Limits{
			IdleTimeout:     cfg.HTTP.SessionIdleTimeout,
			Max:             cfg.HTTP.MaxSessions,
			MaxPerPrincipal: cfg.HTTP.MaxSessionsPerPrincipal,
		},
	})
}

// drain refuses new calls and gives those in progress the shutdown grace
// to finish, cancelling them at its end or at a second SIGINT or SIGTERM.
func (a *App) drain(wg *sync.WaitGroup) {
	a.logger.Info("shutting down; a second SIGINT or SIGTERM cancels the calls in progress at once", "grace", a.o.ShutdownGrace)
	grace, cancel := context.WithTimeout(context.Background(), max(a.o.ShutdownGrace, 0))
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	wg.Go(func() {
		select {
		case <-again:
			a.logger.Warn("shutting down: second signal, cancelling the calls in progress now")
			cancel()
		case <-grace.Done():
		}
	})
	a.srv.Drain(grace)
	signal.Stop(again)
	cancel()
}
