package app

import (
	"context"
	"log/slog"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/telemetry"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// upstreamEvent hears every change in an upstream's state, from the
// first connects on: it is audited, logged and counted, and the proxy
// re-reads the server's tools when they may have changed. The proxy
// exists before the pool starts, so no event comes before it.
func (a *App) upstreamEvent(e upstream.Event) {
	ctx := a.eventCtx
	if !writeUpstreamEvent(ctx, a.audit, a.logger, e) {
		a.tel.AuditWriteFailed()
	}
	recordUpstreamEvent(a.tel, e)
	if e.Kind == upstream.EventConnected || e.Kind == upstream.EventRestarted || e.Kind == upstream.EventToolsChanged || e.Kind == upstream.EventReinitialized && e.ToolsChanged {
		a.srv.UpstreamChanged(ctx, e.Server)
	}
}

// writeUpstreamEvent audits and logs e; it reports whether the audit
// event was written.
func writeUpstreamEvent(ctx context.Context, log *audit.Log, logger *slog.Logger, e upstream.Event) (written bool) {
	ev := audit.Event{Event: audit.KindUpstream, Server: e.Server, Detail: e.Kind.String()}
	if e.Err != nil {
		ev.Error = e.Err.Error()
	}
	ev.Sandbox = sandboxText(e)
	written = true
	if werr := log.Write(ctx, ev); werr != nil {
		logger.Error("writing audit event", "err", werr)
		written = false
	}
	switch {
	case e.Sandbox != nil && len(e.Sandbox.Missing) > 0:
		logger.Warn("upstream sandboxed with confinements missing (sandbox.require: false)", "server", e.Server, "sandbox", e.Sandbox.String())
	case e.SandboxOff && e.Kind == upstream.EventConnected:
		logger.Warn("upstream runs unconfined: its sandbox is off", "server", e.Server)
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

// sandboxText is what confines the server of e, for the upstream audit
// event, the log and tools/validate: the launcher's report, and the files
// self-protection guards that its grants reach anyway; "off" for a stdio
// server run unconfined; "" when e says nothing of it.
func sandboxText(e upstream.Event) string {
	switch {
	case e.Sandbox != nil:
		text := e.Sandbox.String()
		if len(e.SandboxExposed) > 0 {
			text += "; reaches mcpwarden's own files: " + strings.Join(e.SandboxExposed, ", ")
		}
		return text
	case e.SandboxOff:
		return "off"
	}
	return ""
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
