package proxy

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/rules"
)

// With shared state the flow labels a session has armed live in it, so
// that a flow rule holds whichever replica serves the session's next
// request: a round-robin load balancer must not be a way around it. They
// are kept as grants of the session (or, for a request without one, of
// the principal) under the tool name flowLabelTool, one per label, with
// the arming call as their scope, for DefaultSharedGrantTTL. A state that
// cannot be read refuses the request (errFlowState); one that cannot be
// written withholds the result that would have armed the label.

// flowLabelTool is the GrantKey.Tool of an armed flow label.
const flowLabelTool = "flow:armed"

// ruleSharedState names the built-in refusal of a request whose flow
// labels cannot be read from the shared state, in audit events.
const ruleSharedState = "builtin:shared-state"

// errFlowState refuses what the shared flow labels could not be read or
// written for.
var errFlowState = errors.New("mcpwarden cannot reach its shared state (state.url) to read or record the session's flow labels")

// armingJSON is a rules.Arming as the shared state keeps it.
type armingJSON struct {
	Label string `json:"label"`
	ID    string `json:"id"`
	Tool  string `json:"tool"`
}

func armedKey(session, principal string) state.GrantKey {
	return state.GrantKey{Session: session, Principal: principal, Tool: flowLabelTool}
}

// armedOf returns the labels armed for a request of session by principal:
// from the shared state when there is one, else from this process.
func (s *Server) armedOf(ctx context.Context, session, principal string) ([]rules.Arming, error) {
	if s.shared == nil {
		return s.armed.of(session, principal), nil
	}
	grants, err := s.shared.FindGrants(ctx, armedKey(session, principal))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errFlowState, err)
	}
	var out []rules.Arming
	for _, g := range grants {
		var a armingJSON
		if json.Unmarshal(g.Scope, &a) != nil || a.Label == "" {
			continue
		}
		if !slices.ContainsFunc(out, func(x rules.Arming) bool { return x.Label == a.Label }) {
			out = append(out, rules.Arming{Label: a.Label, ID: a.ID, Tool: a.Tool})
		}
	}
	slices.SortFunc(out, func(x, y rules.Arming) int { return cmp.Compare(x.Label, y.Label) })
	return out, nil
}

// armShared records in the shared state the labels of c not armed yet
// when it started.
func (s *Server) armShared(ctx context.Context, c *call) error {
	if s.shared == nil {
		return nil
	}
	for _, l := range c.labels {
		if slices.ContainsFunc(c.armed, func(x rules.Arming) bool { return x.Label == l }) {
			continue
		}
		raw, err := json.Marshal(armingJSON{Label: l, ID: c.decision, Tool: c.tool.Canonical})
		if err != nil {
			return fmt.Errorf("encoding flow label %q: %w", l, err)
		}
		g := state.Grant{Key: armedKey(c.session, c.principal), Effect: state.Allow, Scope: raw}
		if err := s.shared.PutGrant(context.WithoutCancel(ctx), g, DefaultSharedGrantTTL); err != nil {
			return fmt.Errorf("%w: %w", errFlowState, err)
		}
	}
	return nil
}

// flowStateVerdict is the refusal of a request whose session's flow
// labels could not be read.
func flowStateVerdict() rules.Verdict {
	return rules.Verdict{Decision: rules.Deny, Rule: ruleSharedState, Reason: errFlowState.Error() + "; refused rather than decided without them"}
}
