// Package state names what mcpwarden replicas must share so that any of
// them can serve any request of any session (docs/design.md, "Shared state"): grants with
// their time to live, pending asks and their answers, single-use tokens,
// and client session records. A Store holds all four. Two implementations
// exist: state/memory, the embedded default that keeps everything in one
// process as mcpwarden always has, and state/redis, which keeps it in
// Redis 7 or Valkey for many replicas.
//
// Every method of a Store fails closed: when the shared state cannot be
// reached the error wraps ErrUnavailable and the caller refuses what it
// was about to allow. No implementation ever falls back to another
// silently, since that would split grants between replicas. Values the
// package does not interpret (an ask, an answer, a token's value) are the
// caller's JSON, stored as given.
package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/enumtext"
)

// Errors callers branch on with errors.Is.
var (
	// ErrNotFound is returned for an ask, token or session that does not
	// exist: never made, already consumed or answered, or expired.
	ErrNotFound = errors.New("not found")
	// ErrExists is returned when an ask or token with the same ID is
	// already there.
	ErrExists = errors.New("already exists")
	// ErrUnavailable wraps every failure to reach the shared state; a
	// caller must treat it as a refusal (fail closed).
	ErrUnavailable = errors.New("shared state unavailable")
	// ErrClosed is returned by a Store after Close.
	ErrClosed = errors.New("state store closed")
	// ErrFull is returned by a store that holds as many values of a kind
	// as it may (the embedded store's bound on tokens); the caller
	// refuses what it wanted to keep, or passes it on.
	ErrFull = errors.New("state store full")
)

// A Store is the state replicas share. Implementations are safe for
// concurrent use; Close is idempotent and ends every Wait in progress.
type Store interface {
	Grants
	Asks
	Tokens
	Sessions
	PolicyState
	// Check reports whether the state can be reached now, for readiness:
	// nil, or an error wrapping ErrUnavailable (ErrClosed after Close).
	Check(ctx context.Context) error
	Close() error
}

// A GrantKey is what a grant is bound to (docs/design.md, "Asking a human"): the client
// session, the principal, the canonical tool and the ask rule that asked.
type GrantKey struct {
	Session   string `json:"session"`
	Principal string `json:"principal"`
	Tool      string `json:"tool"`
	Rule      string `json:"rule"`
}

// An Answer is what a human (or a resolver on one's behalf) said to an
// ask: through the client's form, the approvals page or CLI, or an
// external resolver. A session grant keeps the answer that made it
// (AllowSession or DenySession). The zero value is Deny, so a forgotten
// assignment fails closed; None, "nothing was answered", decides nothing
// and is never read from text.
type Answer uint8

// The answers, with their names in the comments.
const (
	Deny         Answer = iota // "deny": refuse this call
	AllowOnce                  // "allow_once": forward this call only
	AllowSession               // "allow_session": forward this call and, for the session, the calls with the same paths (or, for a call without paths, any call of the tool without paths)
	AllowFolder                // "allow_session_folder": forward this call and, for the session, the calls whose paths are all under the same folders
	DenySession                // "deny_session": refuse this call and every call of the tool for the session
	None                       // "none": no answer (a form cancelled, no standing grant)
)

var answerNames = enumtext.Names[Answer]{Deny: "deny", AllowOnce: "allow_once", AllowSession: "allow_session", AllowFolder: "allow_session_folder", DenySession: "deny_session", None: "none"}

// String returns the answer's name.
func (a Answer) String() string { return answerNames.String(a, "Answer") }

// MarshalText returns the answer's name.
func (a Answer) MarshalText() ([]byte, error) { return answerNames.Marshal(a, "answer") }

// UnmarshalText reads an answer's name; "none" or anything else is an
// error and leaves Deny.
func (a *Answer) UnmarshalText(b []byte) error {
	if !answerNames.Set(a, string(b)) || *a == None {
		*a = Deny
		return fmt.Errorf("unknown answer %q: want allow_once, allow_session, allow_session_folder, deny or deny_session", b)
	}
	return nil
}

// A Grant is one standing answer of a human for a session: its key, the
// answer (AllowSession or DenySession; a reader takes any other for a
// deny) and its scope. Scope is the caller's JSON (the proxy's scope kind
// and paths); the store matches grants by key only and leaves deciding
// whether a scope covers a call to the caller.
type Grant struct {
	Key    GrantKey        `json:"key"`
	Answer Answer          `json:"answer"`
	Scope  json.RawMessage `json:"scope"`
}

// Grants hold session grants, each until its time to live passes.
type Grants interface {
	// PutGrant keeps g for ttl, which must be positive. Putting the same
	// grant again restarts its time to live.
	PutGrant(ctx context.Context, g Grant, ttl time.Duration) error
	// FindGrants returns the live grants with exactly key, in no order.
	FindGrants(ctx context.Context, key GrantKey) ([]Grant, error)
	// RevokeSession drops every grant of a session, as its end does.
	RevokeSession(ctx context.Context, session string) error
}

// An Ask is a pending ask as the shared state holds it: its ID and the
// caller's description of it (JSON), listed from AskedAt on.
type Ask struct {
	ID      string          `json:"id"`
	AskedAt time.Time       `json:"asked_at"`
	Body    json.RawMessage `json:"body"`
}

// Asks hold pending asks until a human answers them on any replica, and
// deliver the answer to the replica waiting for it.
type Asks interface {
	// PublishAsk lists a as pending for at most ttl; an ID already
	// pending is ErrExists.
	PublishAsk(ctx context.Context, a Ask, ttl time.Duration) error
	// PendingAsks returns the pending asks, oldest first.
	PendingAsks(ctx context.Context) ([]Ask, error)
	// AnswerAsk settles the pending ask id with answer (the caller's
	// JSON) and wakes its waiter, wherever it is. Of concurrent answers
	// exactly one succeeds; the others, and an id not pending, get
	// ErrNotFound.
	AnswerAsk(ctx context.Context, id string, answer json.RawMessage) error
	// WaitAnswer blocks until ask id is answered and returns the answer,
	// or returns ctx's error. It does not withdraw the ask.
	WaitAnswer(ctx context.Context, id string) (json.RawMessage, error)
	// WithdrawAsk takes ask id off the pending list. If it was answered
	// meanwhile, the answer is returned with answered set, so that an
	// answer given as the waiter gave up still counts.
	WithdrawAsk(ctx context.Context, id string) (answer json.RawMessage, answered bool, err error)
}

// Tokens are single-use values: a once-grant, the state of a multi
// round-trip request. Consuming one is atomic across replicas.
type Tokens interface {
	// IssueToken keeps value under token for ttl; a token already there
	// is ErrExists, and a store at its bound on tokens returns ErrFull.
	IssueToken(ctx context.Context, token string, value json.RawMessage, ttl time.Duration) error
	// ConsumeToken returns the value and removes the token; of concurrent
	// consumers exactly one gets it, the others ErrNotFound.
	ConsumeToken(ctx context.Context, token string) (json.RawMessage, error)
}

// A ClientInfo is the client's name and version from initialize.
type ClientInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// A Session is what a replica needs to serve a request of a client
// session it did not initialize.
type Session struct {
	ID           string          `json:"id"`
	Protocol     string          `json:"protocol"`
	Capabilities json.RawMessage `json:"capabilities,omitempty"`
	Client       ClientInfo      `json:"client"`
	Principal    string          `json:"principal"`
	Profile      string          `json:"profile,omitempty"`
}

// Sessions hold client session records, each until it has been idle for
// the time given.
type Sessions interface {
	// SaveSession stores s, replacing a record with its ID, and restarts
	// its idle clock: it expires after idle (positive) without a Touch.
	SaveSession(ctx context.Context, s Session, idle time.Duration) error
	// LoadSession returns the record of session id, or ErrNotFound.
	LoadSession(ctx context.Context, id string) (Session, error)
	// TouchSession restarts the idle clock of session id, or returns
	// ErrNotFound when it has expired or ended.
	TouchSession(ctx context.Context, id string, idle time.Duration) error
	// EndSession drops the record of session id; ending one that is not
	// there is not an error.
	EndSession(ctx context.Context, id string) error
}

// CheckTTL returns an error naming what for when ttl is not positive:
// every shared value expires.
func CheckTTL(what string, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("%s needs a positive time to live, not %s", what, ttl)
	}
	return nil
}
