package upstream

import (
	"context"
	"time"
)

// rootsChangedTimeout bounds sending one notifications/roots/list_changed.
const rootsChangedTimeout = 5 * time.Second

// RootsChanged tells the named server that its roots changed (a reload
// gave it another workspace, which is what mcpwarden answers its
// roots/list with), with notifications/roots/list_changed on its session
// and on the session of each of its isolated children, so that it asks
// again. mcp-go's client declares roots with listChanged, so the server
// may rely on it. A server that is down is not told: it lists its roots
// when it is next up. Best effort, off the caller's path; an unknown name
// is ignored.
func (p *Pool) RootsChanged(ctx context.Context, name string) {
	s, err := p.server(name)
	if err != nil {
		return
	}
	targets := []*server{s}
	if s.kids != nil {
		s.kids.mu.Lock()
		for _, c := range s.kids.byKey {
			targets = append(targets, c.s)
		}
		s.kids.mu.Unlock()
	}
	ctx = context.WithoutCancel(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	for _, t := range targets {
		sess, err := t.current()
		if err != nil {
			continue
		}
		p.env.group.Go(func() {
			nctx, cancel := context.WithTimeout(ctx, rootsChangedTimeout)
			defer cancel()
			if err := sess.client.RootListChanges(nctx); err != nil && !sess.isLost() {
				t.logger.Warn("telling the upstream its roots changed", "err", err)
			}
		})
	}
}
