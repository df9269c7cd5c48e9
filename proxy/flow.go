package proxy

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcpwarden/mcpwarden/rules"
)

// errLabelsNotKept is wrapped by the error of a call whose labels could
// not be recorded: its result is withheld, since a later call could not
// be escalated for what it carried.
var errLabelsNotKept = errors.New("the labels its result arms could not be recorded")

// armBy arms the labels of c, which has returned, in its session. It arms
// them even when the client has gone: the upstream has answered.
func (s *Server) armBy(ctx context.Context, c *call) error {
	if len(c.labels) == 0 {
		return nil
	}
	if err := s.armed.keep(context.WithoutCancel(ctx), c.session, c.principal, c.labels, c.decision, c.tool.Canonical); err != nil {
		s.logger.Warn("recording armed labels", "tool", c.tool.Canonical, "labels", c.labels, "err", err)
		return fmt.Errorf("%w: %w", errLabelsNotKept, err)
	}
	return nil
}

// armedFor returns the labels armed in c's session: every label, when
// they cannot be read (fail closed).
func (s *Server) armedFor(ctx context.Context, c *call) []rules.Arming {
	armed, err := s.armed.armedOf(ctx, c.session, c.principal)
	if err != nil {
		s.logger.Warn("reading armed labels; taking every label as armed", "tool", c.tool.Canonical, "err", err)
		return everyLabelArmed(c.policy)
	}
	return armed
}
