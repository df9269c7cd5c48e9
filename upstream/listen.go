package upstream

import (
	"context"
	"log/slog"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// listenRetry is how long a session of protocol 2026-07-28 waits before
// it reopens a subscriptions/listen stream that ended.
const listenRetry = time.Second

// A server of protocol 2026-07-28 has no standalone GET stream: it sends
// the notifications a client opts in to (tools, prompts and resources
// list changes) on the response stream of a subscriptions/listen request,
// which it holds open. listen keeps one open for as long as ctx lasts,
// reopening it when it ends, for the changes caps says the server
// notifies; they reach the session's notification handler as on the GET
// stream. A session of the initialize handshake, or of a server that
// notifies nothing, does not listen.
func (s *session) listen(ctx context.Context, caps mcp.ServerCapabilities, logger *slog.Logger) {
	filter := mcp.SubscriptionFilter{
		ToolsListChanged:     caps.Tools != nil && caps.Tools.ListChanged,
		PromptsListChanged:   caps.Prompts != nil && caps.Prompts.ListChanged,
		ResourcesListChanged: caps.Resources != nil && caps.Resources.ListChanged,
	}
	if !mcp.IsModernProtocol(s.protocol) || filter.IsEmpty() {
		return
	}
	s.wg.Go(func() {
		for {
			err := s.client.Listen(ctx, filter)
			if ctx.Err() != nil {
				return
			}
			logger.Warn("the upstream's subscriptions/listen stream ended; reopening it", "err", err, "retry_in", listenRetry)
			select {
			case <-ctx.Done():
				return
			case <-time.After(listenRetry):
			}
		}
	})
}
