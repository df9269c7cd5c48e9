package inputrelay

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/state"
)

// A Pending is a call whose upstream asked for input that was relayed to
// the client: what the client's retry must match, and what it carries on.
type Pending struct {
	// The call: the retry must be this session's and principal's call of
	// this tool with these exact arguments (Digest), under the policy it
	// was decided by (PolicySHA256).
	Session      string `json:"session"`
	Principal    string `json:"principal"`
	Tool         string `json:"tool"`
	Digest       string `json:"digest"`
	PolicySHA256 string `json:"policy_sha256"`
	// Decision is the id of the call's decision event: the retry goes on
	// under it, not decided again.
	Decision string `json:"decision"`
	Shadow   bool   `json:"shadow,omitempty"`
	// RequestState is the upstream's, sent back to it verbatim.
	RequestState string `json:"request_state,omitempty"`
	// Relayed are the upstream's ids of the requests the client was sent;
	// Answered, mcpwarden's own answers to the others (roots/list).
	Relayed  []string                   `json:"relayed"`
	Answered map[string]json.RawMessage `json:"answered,omitempty"`
	// Rounds counts the round trips of the call so far.
	Rounds  int       `json:"rounds"`
	Expires time.Time `json:"expires"`
}

// A Keeper keeps Pending calls in a state store, under unguessable single
// use request states: with the shared state, the retry may reach any
// replica.
type Keeper struct {
	Store state.Tokens
}

// storePrefix starts the store's token of a relayed round trip, keeping it
// apart from other single-use tokens.
const storePrefix = "inputrelay:"

// ErrTooMany refuses a new relayed round trip while the store holds as
// many single-use tokens as it may (state.ErrFull).
var ErrTooMany = errors.New("too many calls are waiting for the client's input")

// grace is how long a request state is kept past its expiry, so that a
// retry coming too late is told so rather than that no such state was
// issued.
const grace = time.Minute

// Issue keeps p until it expires (and a grace after) and returns the
// request state the client is sent.
func (k Keeper) Issue(ctx context.Context, p *Pending) (string, error) {
	token := statePrefix + rand.Text()
	switch err := state.IssueJSON(ctx, k.Store, storePrefix+token, p, time.Until(p.Expires)+grace); {
	case errors.Is(err, state.ErrFull):
		return "", ErrTooMany
	case err != nil:
		return "", fmt.Errorf("keeping a request state: %w", err)
	}
	return token, nil
}

// Take returns the Pending of a request state and forgets it (a state is
// single use, on every replica at once): nil for one that is not pending
// (never issued, used, or forgotten after its grace), and an error only
// when the store cannot be reached.
func (k Keeper) Take(ctx context.Context, token string) (*Pending, error) {
	var p Pending
	switch found, err := state.ConsumeJSON(ctx, k.Store, storePrefix+token, &p); {
	case err != nil:
		return nil, fmt.Errorf("reading a request state: %w", err)
	case !found:
		return nil, nil
	}
	return &p, nil
}
