package streamable

import (
	"context"

	"github.com/mcpwarden/mcpwarden/proxy/sessiontable"
)

// reserve reserves a place for a session principal may open (see
// sessiontable.Table.Reserve) and ends the idle sessions evicted to make room:
// here, as the reaper ends a session, and in the shared state, as a DELETE
// does, so that no replica adopts it again and its client, getting 404,
// initializes again. Each eviction is logged and counted.
func (hs *Sessions) reserve(ctx context.Context, principal string) (*sessiontable.Reservation, error) {
	res, evicted, err := hs.ids.Reserve(principal)
	for _, ev := range evicted {
		hs.logger.Info("evicted an idle HTTP session to make room for a new one",
			"session", ev.ID, "owner", ev.Owner, "principal", principal, "cap", ev.Cap.String())
		hs.tel.SessionEvicted(ev.Cap)
		if err := hs.peers.endEverywhere(ctx, ev.ID); err != nil {
			hs.logger.Warn("ending an evicted HTTP session in the shared state; it ends there when it expires", "session", ev.ID, "err", err)
		}
		hs.end(ctx, ev.ID)
	}
	return res, err
}
