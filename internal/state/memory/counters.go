package memory

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/state"
)

var _ state.PolicyState = (*PolicyState)(nil)

// sweepAt is the number of entries at which a write sweeps out the
// expired ones, so that ended sessions do not pile up.
const sweepAt = 4096

// A PolicyState keeps limit counters and armed labels in this process's
// memory, for one replica. The zero value is ready to use; it is safe for
// concurrent use.
type PolicyState struct {
	mu       sync.Mutex
	counters map[string]counter
	labels   map[string]labelSet
}

type counter struct {
	n   int64
	end time.Time // when its window ends
}

type labelSet struct {
	armed   []state.ArmedLabel // in label order
	expires time.Time
}

// Incr implements state.Counters.
func (p *PolicyState) Incr(_ context.Context, key string, window time.Duration) (int64, error) {
	if err := state.CheckWindow(window); err != nil {
		return 0, err
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.counters == nil {
		p.counters = map[string]counter{}
	}
	c, ok := p.counters[key]
	if !ok && len(p.counters) >= sweepAt {
		for k, c := range p.counters {
			if !now.Before(c.end) {
				delete(p.counters, k)
			}
		}
	}
	if !now.Before(c.end) {
		c = counter{end: now.Add(window)}
	}
	c.n++
	p.counters[key] = c
	return c.n, nil
}

// ArmLabels implements state.Labels.
func (p *PolicyState) ArmLabels(_ context.Context, scope string, labels []state.ArmedLabel, ttl time.Duration) error {
	if err := state.CheckTTL("armed labels", ttl); err != nil {
		return err
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.labels == nil {
		p.labels = map[string]labelSet{}
	}
	set, ok := p.labels[scope]
	if !ok && len(p.labels) >= sweepAt {
		for k, s := range p.labels {
			if !now.Before(s.expires) {
				delete(p.labels, k)
			}
		}
	}
	if !now.Before(set.expires) {
		set = labelSet{}
	}
	armed := slices.Clone(set.armed) // the slice handed out is never changed
	for _, l := range labels {
		i, found := slices.BinarySearchFunc(armed, l.Label, func(a state.ArmedLabel, label string) int { return cmp.Compare(a.Label, label) })
		if !found {
			armed = slices.Insert(armed, i, l)
		}
	}
	p.labels[scope] = labelSet{armed: armed, expires: now.Add(ttl)}
	return nil
}

// ArmedLabels implements state.Labels.
func (p *PolicyState) ArmedLabels(_ context.Context, scope string) ([]state.ArmedLabel, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	set := p.labels[scope]
	if !time.Now().Before(set.expires) {
		return nil, nil
	}
	return set.armed, nil
}

// DisarmLabels implements state.Labels.
func (p *PolicyState) DisarmLabels(_ context.Context, scope string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.labels, scope)
	return nil
}
