package proxy

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/proxy/ask"
)

// requestStatePrefix starts the shared state's token of a multi
// round-trip ask, keeping it apart from other single-use tokens.
const requestStatePrefix = "requeststate:"

// errTooManyPending refuses a new multi round-trip ask while
// maxPendingAsks are waiting in the embedded store.
var errTooManyPending = errors.New("too many asks are waiting for the client's answer")

// pendingJSON is a pendingAsk as the shared state keeps it.
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

func (p *pendingAsk) toJSON() pendingJSON {
	return pendingJSON{
		Session: p.session, Principal: p.key.Principal, Tool: p.key.Tool, Rule: p.key.Rule, Digest: p.digest,
		Pathless: p.t.Pathless, Earns: p.t.Earns, Paths: p.t.Paths, Forms: p.t.Forms, Folders: p.t.Folders, Endpoint: p.t.Endpoint,
		Offered: p.offered, Expires: p.expires,
	}
}

func (j pendingJSON) pending() *pendingAsk {
	return &pendingAsk{
		session: j.Session, key: ask.GrantKey{Principal: j.Principal, Tool: j.Tool, Rule: j.Rule}, digest: j.Digest,
		t:       ask.Target{Pathless: j.Pathless, Earns: j.Earns, Paths: j.Paths, Forms: j.Forms, Folders: j.Folders, Endpoint: j.Endpoint},
		offered: j.Offered, expires: j.Expires,
	}
}

// issueState keeps p under a new unguessable request state, for the
// client's retry, until it expires: in the state store, so that with the
// shared state the retry may reach any replica. A store at its bound is
// errTooManyPending.
func (a *asker) issueState(ctx context.Context, p *pendingAsk) (string, error) {
	token := rand.Text()
	raw, err := json.Marshal(p.toJSON())
	if err != nil {
		return "", fmt.Errorf("encoding a request state: %w", err)
	}
	switch err := a.state.store.IssueToken(ctx, requestStatePrefix+token, raw, time.Until(p.expires)); {
	case errors.Is(err, state.ErrFull):
		return "", errTooManyPending
	case err != nil:
		return "", fmt.Errorf("keeping a request state: %w", err)
	}
	return token, nil
}

// takeState returns the pending ask of a request state and forgets it:
// a state is single use, on every replica at once. It returns nil for a
// state that is not pending (never issued, used, or expired), and an
// error only when the shared state cannot be reached.
func (a *asker) takeState(ctx context.Context, token string) (*pendingAsk, error) {
	raw, err := a.state.store.ConsumeToken(ctx, requestStatePrefix+token)
	if errors.Is(err, state.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading a request state: %w", err)
	}
	var j pendingJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, nil // not one this code wrote: no pending ask
	}
	return j.pending(), nil
}
