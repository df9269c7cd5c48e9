package ask

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/state"
)

// The store a Keeper keeps grants and pending asks in: the state replicas
// share, or the embedded in-memory one.
type store interface {
	state.Grants
	state.Tokens
}

// A Keeper keeps the session grants and the pending multi round-trip asks
// in a state store, with one implementation whether the store is the
// state replicas share or the embedded in-memory one.
type Keeper struct {
	Store store
	// GrantTTL is how long a session grant is kept.
	GrantTTL time.Duration
}

// A Pending is an ask sent to a client that answers by retrying the call
// (protocol 2026-07-28 multi round-trip), kept under its request state.
type Pending struct {
	Session string
	Key     GrantKey
	Digest  string // of the canonical arguments: the answer is for this call only
	Target  Target
	Offered []string // the form's choices
	Expires time.Time
}

// requestStatePrefix starts the store's token of a multi round-trip ask,
// keeping it apart from other single-use tokens.
const requestStatePrefix = "requeststate:"

// ErrTooManyPending refuses a new multi round-trip ask while the store
// holds as many as it may (state.ErrFull).
var ErrTooManyPending = errors.New("too many asks are waiting for the client's answer")

// grantKey is the store's key of a grant of session.
func grantKey(session string, key GrantKey) state.GrantKey {
	return state.GrantKey{Session: session, Principal: key.Principal, Tool: key.Tool, Rule: key.Rule}
}

// Standing returns the standing answer of session id's grants for a call
// about t. A call without a session id has none: nothing it grants
// outlives it. A session deny wins over a session allow. A grant whose
// scope cannot be read covers nothing.
func (k Keeper) Standing(ctx context.Context, id string, key GrantKey, t Target) (state.Answer, error) {
	if id == "" {
		return state.None, nil
	}
	grants, err := k.Store.FindGrants(ctx, grantKey(id, key))
	if err != nil {
		return state.None, fmt.Errorf("looking up the session grants: %w", err)
	}
	ans := state.None
	for _, g := range grants {
		var sc Scope
		if json.Unmarshal(g.Scope, &sc) != nil || !sc.Covers(t) {
			continue
		}
		if g.Answer != state.AllowSession { // DenySession, or what no grant says: fail closed
			return state.DenySession, nil
		}
		ans = state.AllowSession
	}
	return ans, nil
}

// Remember records a session-wide answer: it resolves the asks of w
// waiting here that it covers, and is kept in the store (for every
// replica, when it is the shared state). A scope that covers nothing is
// not kept, nor a grant of a call without a session id.
func (k Keeper) Remember(ctx context.Context, w *Waiting, id string, key GrantKey, ans state.Answer, sc Scope) error {
	if sc.Kind == ScopeNothing {
		return nil
	}
	w.Wake(key, ans, sc)
	if id == "" {
		return nil
	}
	raw, err := json.Marshal(sc)
	if err != nil {
		return fmt.Errorf("encoding a grant's scope: %w", err)
	}
	g := state.Grant{Key: grantKey(id, key), Answer: state.AllowSession, Scope: raw}
	if ans == state.DenySession {
		g.Answer = state.DenySession
	}
	if err := k.Store.PutGrant(ctx, g, k.GrantTTL); err != nil {
		return fmt.Errorf("sharing the session grant: %w", err)
	}
	return nil
}

// pendingJSON is a Pending as the store keeps it.
type pendingJSON struct {
	Session   string    `json:"session"`
	Principal string    `json:"principal"`
	Tool      string    `json:"tool"`
	Rule      string    `json:"rule"`
	Digest    string    `json:"digest"`
	Pathless  bool      `json:"pathless,omitempty"`
	Earns     bool      `json:"earns,omitempty"`
	Paths     []string  `json:"paths,omitempty"`
	Forms     []string  `json:"forms,omitempty"`
	Folders   []string  `json:"folders,omitempty"`
	Endpoint  string    `json:"endpoint,omitempty"`
	Offered   []string  `json:"offered"`
	Expires   time.Time `json:"expires"`
}

// lateAnswerGrace is how long a request state is kept past its ask's
// expiry, so that a retry answering too late is refused as timed out (and
// audited so), not as a state no ask ever issued.
const lateAnswerGrace = time.Minute

// Issue keeps p under a new unguessable request state, for the client's
// retry, until it expires and a grace after (lateAnswerGrace): with the
// shared state the retry may reach any replica. A store at its bound is
// ErrTooManyPending.
func (k Keeper) Issue(ctx context.Context, p *Pending) (string, error) {
	token := rand.Text()
	j := pendingJSON{
		Session: p.Session, Principal: p.Key.Principal, Tool: p.Key.Tool, Rule: p.Key.Rule, Digest: p.Digest,
		Pathless: p.Target.Pathless, Earns: p.Target.Earns, Paths: p.Target.Paths, Forms: p.Target.Forms, Folders: p.Target.Folders, Endpoint: p.Target.Endpoint,
		Offered: p.Offered, Expires: p.Expires,
	}
	switch err := state.IssueJSON(ctx, k.Store, requestStatePrefix+token, j, time.Until(p.Expires)+lateAnswerGrace); {
	case errors.Is(err, state.ErrFull):
		return "", ErrTooManyPending
	case err != nil:
		return "", fmt.Errorf("keeping a request state: %w", err)
	}
	return token, nil
}

// Take returns the pending ask of a request state and forgets it: a state
// is single use, on every replica at once. It returns nil for a state
// that is not pending (never issued, used, or expired), and an error only
// when the shared state cannot be reached.
func (k Keeper) Take(ctx context.Context, token string) (*Pending, error) {
	var j pendingJSON
	switch found, err := state.ConsumeJSON(ctx, k.Store, requestStatePrefix+token, &j); {
	case err != nil:
		return nil, fmt.Errorf("reading a request state: %w", err)
	case !found:
		return nil, nil // not pending, or not one this code wrote
	}
	return &Pending{
		Session: j.Session, Key: GrantKey{Principal: j.Principal, Tool: j.Tool, Rule: j.Rule}, Digest: j.Digest,
		Target:  Target{Pathless: j.Pathless, Earns: j.Earns, Paths: j.Paths, Forms: j.Forms, Folders: j.Folders, Endpoint: j.Endpoint},
		Offered: j.Offered, Expires: j.Expires,
	}, nil
}
