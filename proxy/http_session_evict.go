package proxy

import (
	"context"
)

// reserve reserves a place for a session principal may open (see
// sessionIDs.reserve) and ends the idle sessions evicted to make room:
// here, as the reaper ends a session, and in the shared state, as a DELETE
// does, so that no replica adopts it again and its client, getting 404,
// initializes again. Each eviction is logged and counted.
func (hs *httpSessions) reserve(ctx context.Context, principal string) (*reservation, error) {
	res, evicted, err := hs.ids.reserve(principal)
	for _, ev := range evicted {
		hs.logger.Info("evicted an idle HTTP session to make room for a new one",
			"session", ev.id, "owner", ev.owner, "principal", principal, "cap", ev.cap.String())
		hs.tel.SessionEvicted(ev.cap)
		if err := hs.endShared(ctx, ev.id); err != nil {
			hs.logger.Warn("ending an evicted HTTP session in the shared state; it ends there when it expires", "session", ev.id, "err", err)
		}
		hs.end(ctx, ev.id)
	}
	return res, err
}
