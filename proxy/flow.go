package proxy

import (
	"context"
	"slices"
	"sync"

	"github.com/mcpwarden/mcpwarden/rules"
)

// armedLabels are the labels armed in each client session (docs/design.md, "Deciding a request"):
// a label is armed once a request carrying it has returned, and the flow
// rules then escalate the session's later requests. A request without a
// session (an HTTP request served by an ephemeral session) arms and reads
// its principal's labels instead, which last as long as the process: it
// has no narrower scope that outlives the request. It is safe for
// concurrent use; the slices it hands out are never changed.
type armedLabels struct {
	mu          sync.Mutex
	bySession   map[string][]rules.Arming
	byPrincipal map[string][]rules.Arming
}

// of returns the labels armed for a request of session by principal.
func (a *armedLabels) of(session, principal string) []rules.Arming {
	a.mu.Lock()
	defer a.mu.Unlock()
	if session == "" {
		return a.byPrincipal[principal]
	}
	return a.bySession[session]
}

// arm arms labels for session (or, without one, principal), each with the
// call that armed it; a label already armed keeps its first arming call.
func (a *armedLabels) arm(session, principal string, labels []string, id, tool string) {
	if len(labels) == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	m, key := &a.bySession, session
	if session == "" {
		m, key = &a.byPrincipal, principal
	}
	old := (*m)[key]
	next := slices.Clip(old)
	for _, l := range labels {
		if !slices.ContainsFunc(old, func(x rules.Arming) bool { return x.Label == l }) {
			next = append(next, rules.Arming{Label: l, ID: id, Tool: tool})
		}
	}
	if len(next) == len(old) {
		return
	}
	if *m == nil {
		*m = map[string][]rules.Arming{}
	}
	(*m)[key] = next
}

// end drops an ended session's labels.
func (a *armedLabels) end(session string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.bySession, session)
}

// armBy arms the labels of c, which has returned, in its session, and in
// the shared state when there is one; an error there means the result
// must be withheld (see flow_shared.go).
func (s *Server) armBy(ctx context.Context, c *call) error {
	s.armed.arm(c.session, c.principal, c.labels, c.decision, c.tool.Canonical)
	return s.armShared(ctx, c)
}
