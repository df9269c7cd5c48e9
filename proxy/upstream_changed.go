package proxy

import (
	"context"
)

// UpstreamChanged re-reads a server's tools after it connected, restarted
// or announced a tools/list_changed: the pins are checked, the policy
// re-applied and clients told when the exposed set changed.
func (s *Server) UpstreamChanged(ctx context.Context, server string) {
	tools, err := s.upstream.Tools(server)
	if err != nil && tools == nil {
		return
	}
	s.review.check(ctx, server, tools)
	if err := s.SetTools(ctx, server, tools); err != nil {
		s.logger.Error("keeping the previous tools", "server", server, "err", err)
	}
	s.catalog.refresh(ctx, server)
}
