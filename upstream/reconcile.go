package upstream

import (
	"context"
	"reflect"
	"slices"
	"sync"
)

// Reconcile makes the pool serve specs, for a reloaded configuration. A
// server in specs but not in the pool is added and started as Start does;
// one in the pool but not in specs is removed: it leaves the pool at once
// (Call, Tools, Err and Session return ErrUnknownServer), its calls in
// flight fail with ErrUnavailable, its session is closed and its process
// group stopped, and EventRemoved is reported. A server whose Spec changed
// is replaced: new calls go to the new one, which reports EventConnected
// or EventFailed, and wait while it starts (see Call). The old one is
// stopped like a removed one (without EventRemoved): at once and before
// the new one's first attempt when it has no calls in flight; otherwise
// it drains, in the background, the new one starting meanwhile: its calls
// in flight (and queued) run to their end, bounded by its CallTimeout,
// then it is stopped, and it is not restarted if it goes down meanwhile.
// A server whose Spec is unchanged keeps running
// untouched, the same session; Specs are compared field by field, with nil
// and empty maps and slices equal and HeaderFunc compared only as set or
// not (a func cannot be compared; the new one is used from then on, by
// the running session too). Reconcile returns the names added, removed
// and restarted (replaced), each sorted, once the removed and replaced
// servers are stopped (but for those draining) and the new ones have
// succeeded or failed their
// first attempt; ctx bounds the first attempts only, failures are retried
// in the background (see Err). Concurrent calls are applied one at a time,
// each against the result of the one before; Reconcile after Close does
// nothing and returns nil lists. It must not be called from OnEvent.
func (p *Pool) Reconcile(ctx context.Context, specs map[string]Spec) (added, removed, restarted []string) {
	var stopping, draining []*server
	var first sync.WaitGroup
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, nil, nil
	}
	for name, s := range p.retiring { // forget those whose supervisor has ended
		if s.ended() {
			delete(p.retiring, name)
		}
	}
	cur := *p.servers.Load()
	next := make(map[string]*server, len(specs))
	var starting []*server
	for name, spec := range specs {
		old, ok := cur[name]
		if ok && specEqual(old.spec, spec) {
			old.setHeaderFunc(spec.HeaderFunc)
			next[name] = old
			continue
		}
		earlier := p.retiring[name] // one removed or replaced by an earlier Reconcile, still stopping
		drain := false
		if ok {
			restarted = append(restarted, name)
			p.retireLocked(old, retiredReplaced)
			if drain = old.busy(); drain {
				draining = append(draining, old)
			} else {
				stopping = append(stopping, old)
			}
		} else {
			added = append(added, name)
		}
		s := newServer(p.ctx, p.env, name, spec)
		s.prev = p.retiring[name] // the replaced one, or one removed by an earlier Reconcile
		if drain {
			s.prev = earlier // not the draining one: it serves its calls while the new one starts
		}
		next[name] = s
		starting = append(starting, s)
	}
	for name, old := range cur {
		if _, ok := specs[name]; !ok {
			removed = append(removed, name)
			p.retireLocked(old, retiredRemoved)
			stopping = append(stopping, old)
		}
	}
	p.servers.Store(&next)
	for _, s := range stopping {
		s.cancel()
	}
	for _, s := range draining {
		p.env.group.Go(s.drainThenStop)
	}
	for _, s := range starting {
		s.start(ctx, &first)
	}
	p.mu.Unlock()

	for _, s := range stopping {
		<-s.done
	}
	first.Wait()
	slices.Sort(added)
	slices.Sort(removed)
	slices.Sort(restarted)
	if len(added)+len(removed)+len(restarted) > 0 {
		p.logger.Info("upstreams reconciled", "added", added, "removed", removed, "restarted", restarted)
	}
	return added, removed, restarted
}

// retireLocked retires s (see server.retire) and records it until its
// supervisor has ended, so that a new server of the same name starts after
// that. p.mu is held.
func (p *Pool) retireLocked(s *server, why retirement) {
	s.retire(why)
	p.retiring[s.name] = s
}

// specEqual reports whether a and b describe the same server: the same
// fields, with nil and empty maps and slices alike and HeaderFunc only set
// or not.
func specEqual(a, b Spec) bool {
	if (a.HeaderFunc == nil) != (b.HeaderFunc == nil) {
		return false
	}
	return reflect.DeepEqual(a.canonical(), b.canonical())
}

// canonical is s without HeaderFunc, egress, OAuth's token store (a store
// has state of its own, such as discovery done; the running session keeps
// its own) and DirOrigin (a line added above cwd restarts no server), and
// with empty maps and slices nil.
func (s Spec) canonical() Spec {
	s.HeaderFunc, s.egress, s.DirOrigin = nil, nil, ""
	if s.OAuth != nil {
		o := *s.OAuth
		o.Tokens = nil
		s.OAuth = &o
	}
	if len(s.Args) == 0 {
		s.Args = nil
	}
	if len(s.Env) == 0 {
		s.Env = nil
	}
	if len(s.Headers) == 0 {
		s.Headers = nil
	}
	return s
}
