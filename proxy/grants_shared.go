package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/proxy/ask"
)

// DefaultSharedGrantTTL is how long a session grant lives in the shared
// state. A grant dies with its session everywhere when the session is
// ended (DELETE revokes it); one whose session expired instead outlives
// it harmlessly until then, since a session ID is never issued twice.
const DefaultSharedGrantTTL = 24 * time.Hour

// ownGrantTTL is how long a session grant lives in the embedded store,
// the proxy's own: as long as its session, which revokes it as it ends.
const ownGrantTTL = 100 * 365 * 24 * time.Hour

// Session grants are kept in the sessions' state store (sessionState),
// with one implementation: the shared state (Options.State), for every
// replica, or else the embedded in-memory store of the proxy's own, whose
// grants end with their session here.

// sharedKey is the shared state's key of a grant of session.
func sharedKey(session string, key ask.GrantKey) state.GrantKey {
	return state.GrantKey{Session: session, Principal: key.Principal, Tool: key.Tool, Rule: key.Rule}
}

// standing returns the standing answer of session id's grants for a call.
// A call without a session id has none: nothing it grants outlives it. A
// session deny wins over a session allow. A grant whose scope cannot be
// read covers nothing.
func (a *asker) standing(ctx context.Context, id string, key ask.GrantKey, t ask.Target) (ask.Answer, error) {
	if id == "" {
		return ask.None, nil
	}
	grants, err := a.state.store.FindGrants(ctx, sharedKey(id, key))
	if err != nil {
		return ask.None, fmt.Errorf("looking up the session grants: %w", err)
	}
	ans := ask.None
	for _, g := range grants {
		var sc ask.Scope
		if json.Unmarshal(g.Scope, &sc) != nil || !sc.Covers(t) {
			continue
		}
		if g.Effect == state.Deny {
			return ask.DenySession, nil
		}
		ans = ask.AllowSession
	}
	return ans, nil
}

// remember records a session-wide answer: it resolves the asks of sess
// waiting here that it covers, and is kept in the state store (for every
// replica, when it is the shared state). A scope that covers nothing is
// not kept, nor a grant of a call without a session id.
func (a *asker) remember(ctx context.Context, sess *ask.Waiting, id string, key ask.GrantKey, ans ask.Answer, sc ask.Scope) error {
	if sc.Kind == ask.ScopeNothing {
		return nil
	}
	sess.Wake(key, ans, sc)
	if id == "" {
		return nil
	}
	raw, err := json.Marshal(sc)
	if err != nil {
		return fmt.Errorf("encoding a grant's scope: %w", err)
	}
	g := state.Grant{Key: sharedKey(id, key), Effect: state.Allow, Scope: raw}
	if ans == ask.DenySession {
		g.Effect = state.Deny
	}
	if err := a.state.store.PutGrant(ctx, g, a.state.grantTTL); err != nil {
		return fmt.Errorf("sharing the session grant: %w", err)
	}
	return nil
}

// unavailable is the refusal of a call that needs the shared state to be
// decided (its session grants) while it cannot be reached.
func (a *asker) unavailable(c *call, err error) resolution {
	return resolution{
		grantedBy: audit.GrantedByRule,
		reason:    "the shared state cannot be reached: refused rather than decided from one replica's memory",
		failure:   err.Error(),
		text:      fmt.Sprintf("mcpwarden: %s needs approval (%s); mcpwarden cannot reach its shared state (state.url) to decide it; not forwarded.", c.tool.Canonical, ruleName(c)),
	}
}

// withGrantFailure notes on res that the session grant it gave could not
// be shared: the call itself goes on as the human answered, and other
// replicas ask again.
func withGrantFailure(res resolution, err error) resolution {
	if err == nil {
		return res
	}
	res.reason += "; the session grant could not be shared, so other replicas will ask again"
	if res.failure != "" {
		res.failure += "; "
	}
	res.failure += err.Error()
	return res
}
