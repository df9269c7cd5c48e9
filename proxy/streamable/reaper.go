package streamable

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/telemetry"
	"github.com/mcpwarden/mcpwarden/proxy/sessiontable"
)

// Sessions are the HTTP listener's sessions: the table of live IDs
// and mcp-go's streamable HTTP server, which keeps its own state for each
// session (its registration with the MCP server, whose unregister hook
// clears the proxy's grants and known sessions and the session gauge; its
// tools, resources and log level stores).
type Sessions struct {
	ids    *sessiontable.Table
	stream *server.StreamableHTTPServer
	// front serves what the listener serves itself and hands the rest to
	// stream (see post.go).
	front  *front
	logger *slog.Logger
	// peers keeps the sessions in step with the other replicas (see
	// shared.go).
	peers peering
	// tel counts evictions; nil counts nothing.
	tel *telemetry.Telemetry
	// principalOf and profileOf are who a request's context comes from
	// and the profile it runs under (Host.PrincipalOf, Host.ProfileOf).
	principalOf func(ctx context.Context) string
	profileOf   func(ctx context.Context) string
	// audit records a refusal (Host.Audit).
	audit func(ctx context.Context, e audit.Event)
}

// reapInterval is how often Reap looks for idle sessions: a quarter of
// the idle timeout, at least 10 ms and at most a minute, so a session
// lives at most that much past its timeout.
func reapInterval(idle time.Duration) time.Duration {
	return min(max(idle/4, 10*time.Millisecond), time.Minute)
}

// IDs returns the table of the sessions' IDs.
func (hs *Sessions) IDs() *sessiontable.Table { return hs.ids }

// Reap ends every session idle for the idle timeout, until ctx ends.
// With shared state it ends a session only here (its record lives on
// while other replicas use it, and expires on its own), and keeps the
// record of a session busy here alive.
func (hs *Sessions) Reap(ctx context.Context) {
	tick := time.NewTicker(reapInterval(hs.ids.Limits().IdleTimeout))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			hs.peers.touchBusy(ctx)
			expired := hs.ids.Expire(now)
			for _, id := range expired {
				hs.end(ctx, id)
			}
			if len(expired) > 0 {
				live, _, _ := hs.ids.Counts()
				hs.logger.Info("ended idle HTTP sessions", "ended", len(expired), "idle_timeout", hs.ids.Limits().IdleTimeout, "sessions_live", live)
			}
		}
	}
}

// end clears everything mcp-go and the proxy hold for a session whose ID
// is no longer live. mcp-go clears its per-session stores and unregisters
// the session (running the proxy's hook) only for a DELETE, so end hands
// its handler one, as a client ending the session would send.
func (hs *Sessions) end(ctx context.Context, id string) {
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodDelete, EndpointPath, http.NoBody)
	if err != nil {
		hs.logger.Error("ending an HTTP session", "session", id, "err", err)
		return
	}
	req.Header.Set(server.HeaderKeySessionID, id)
	hs.stream.ServeHTTP(&discardResponse{header: http.Header{}}, req)
	hs.front.forget(id)
}

// A discardResponse is the response writer of a request the listener
// makes of mcp-go itself: nothing is sent anywhere.
type discardResponse struct {
	header http.Header
}

func (d *discardResponse) Header() http.Header         { return d.header }
func (d *discardResponse) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardResponse) WriteHeader(int)             {}
