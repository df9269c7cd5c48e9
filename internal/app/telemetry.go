package app

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/internal/telemetry"
)

// telemetryShutdownTimeout bounds flushing the last spans at exit.
const telemetryShutdownTimeout = 5 * time.Second

// startTelemetry builds the metrics and tracing the config turns on and
// serves the metrics endpoint, with readiness (the upstreams and checks)
// next to it, in a goroutine until stop is called. stateMetrics are the
// shared state's, registered with the others. Without
// metrics or tracing keys it returns a nil Telemetry, which records
// nothing. stop, which must be called, ends the endpoint, waits for its
// goroutine and flushes the spans not yet exported, within
// telemetryShutdownTimeout.
func startTelemetry(ctx context.Context, cfg *config.Config, logger *slog.Logger, version string, stateMetrics *telemetry.StateMetrics, checks []telemetry.Check) (tel *telemetry.Telemetry, stop func(), err error) {
	if !cfg.Telemetry.Enabled() {
		return nil, func() {}, nil
	}
	tel, err = telemetry.New(telemetry.Options{
		Config:         cfg.Telemetry,
		Servers:        cfg.ServerNames(),
		Profiles:       slices.Sorted(maps.Keys(cfg.Profiles)),
		ServiceVersion: version,
		Logger:         logger,
		State:          stateMetrics,
		Checks:         checks,
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
