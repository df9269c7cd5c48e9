// Package approvals answers "ask" decisions out of band, for clients that
// cannot elicit: a Broker holds pending asks until a human answers them on
// a loopback web page (Handler) or with the CLI (Client), and the Command
// and URL resolvers hand asks to an external program or service. All of
// them are Resolvers; the proxy tries them in the order docs/design.md gives ("Asking a human").
// Nothing here ever sees or answers an MCP message: the model cannot
// approve its own call through this package.
//
// The page's security: it listens on loopback only; every request but the
// static files needs the per-run token (130 random bits, printed on stderr
// at start and kept in a 0600 token file, never in anything sent to the
// client), compared in constant time; a Host header other than the
// listener's loopback names is refused (DNS rebinding) and so is an Origin
// other than the page's own. An answer is a POST that must carry the token
// in the Authorization header and a JSON body: a cross-site form or a
// simple cross-origin request can do neither, and a preflighted one is
// refused (no CORS), so the secret token is also the CSRF token; net/http's
// CrossOriginProtection (Sec-Fetch-Site) is checked on top. The page's
// script puts every value into the page with textContent, and its CSP
// allows no inline script, no framing and no referrer.
package approvals

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/argview"
	"github.com/mcpwarden/mcpwarden/internal/enumtext"
	"github.com/mcpwarden/mcpwarden/internal/state"
)

// ParseAnswer reads the answer a resolver, the page or the CLI gives:
// allow_once, allow_session, allow_session_folder or deny (deny_session is
// an answer of the client's form only). Anything else is an error, with
// Deny.
func ParseAnswer(s string) (state.Answer, error) {
	var a state.Answer
	if err := a.UnmarshalText([]byte(s)); err != nil || a == state.DenySession {
		return state.Deny, fmt.Errorf("unknown decision %q: want allow_once, allow_session, allow_session_folder or deny", s)
	}
	return a, nil
}

// A Via is the channel an answer came through, written by its name in
// the history and the shared state. The zero value is ViaNone, for an ask
// that ended unanswered.
type Via uint8

// The channels, with their names in the comments.
const (
	ViaNone     Via = iota // "": no channel (the ask expired or was withdrawn)
	ViaPage                // "approval_page": the approvals page
	ViaCLI                 // "approval_cli": mcpwarden approve / deny
	ViaResolver            // "resolver": an external resolver
)

var viaNames = enumtext.Names[Via]{ViaNone: "", ViaPage: "approval_page", ViaCLI: "approval_cli", ViaResolver: "resolver"}

// String returns the channel's name.
func (v Via) String() string { return viaNames.String(v, "Via") }

// MarshalText returns the channel's name.
func (v Via) MarshalText() ([]byte, error) { return viaNames.Marshal(v, "channel") }

// UnmarshalText reads a channel's name; anything else is an error and
// leaves ViaNone.
func (v *Via) UnmarshalText(b []byte) error {
	if !viaNames.Set(v, string(b)) {
		return fmt.Errorf("unknown answer channel %q", b)
	}
	return nil
}

// A Decision is a resolver's answer to one ask: what was answered, through
// which channel, and by whom (free text for the audit log and the page).
type Decision struct {
	Answer state.Answer
	Via    Via
	Who    string
}

// A Request is one ask as a resolver sees it: the call as it will be
// forwarded and the rule that asked. Only credentials the secret scanner
// finds in values are hidden from the arguments (argview.Hide); everything
// else is shown in full (audit redaction is never applied to what a human
// approves). Its texts that come from the client, the upstream or the
// config (Tool, Server, Client, Principal, Rule) have their control,
// bidirectional and invisible characters escaped (argview.Escape), as the
// form shows them. It is what Command and URL send, as JSON.
type Request struct {
	// ID names the ask in the CLI, on the page and in the resolvers' JSON.
	// The Broker assigns one (NewID) when it is empty.
	ID      string `json:"id"`
	Tool    string `json:"tool"` // canonical mcp:<server>:<tool>
	Server  string `json:"server"`
	Client  string `json:"client,omitempty"`  // name and version from initialize
	Session string `json:"session,omitempty"` // the MCP session id
	// Principal is who sent the call: "local", "anonymous", "token:…".
	Principal string `json:"principal,omitempty"`
	Rule      string `json:"rule"`           // the ask rule's text, or "default"
	Gate      string `json:"gate,omitempty"` // where the rule is: policy, servers.fs.policy …
	// Arguments are the call's arguments as they will be forwarded, in
	// full, with the credentials in values hidden (argview.Hide).
	Arguments map[string]any `json:"arguments"`
	// Paths are the path-like values with every form mcpwarden decided
	// them on.
	Paths []PathForm `json:"paths,omitempty"`
	// Lines are the arguments as argview.Render lays them out for people,
	// in full: what the approval form shows, and what the approvals page
	// and `mcpwarden approvals` show, so that all three agree.
	Lines []string `json:"lines,omitempty"`
	// Folders, when set, are the folders an allow_session_folder answer
	// would cover; without them that answer gives no session grant.
	Folders []string  `json:"folders,omitempty"`
	AskedAt time.Time `json:"asked_at"`
}

// A PathForm is a path-like value as sent with every form mcpwarden
// decided it on: `notes/../../run.sh`, which is `/srv/app/run.sh`, on disk
// `/outside/run.sh`.
type PathForm = argview.Path

// A Resolver answers asks. Resolve blocks until it has an answer or ctx is
// done; an error always means the call is denied (the Decision returned
// with it still names the channel). Implementations are safe for
// concurrent use.
type Resolver interface {
	Resolve(ctx context.Context, req Request) (Decision, error)
}

// A Locator is a Resolver that can tell the human where to answer an ask:
// the approvals page's address, the CLI command. The text never holds a
// secret, since it is shown to the client (and so to the model).
type Locator interface {
	Where(id string) string
}

var (
	_ Resolver = (*Broker)(nil)
	_ Locator  = (*Broker)(nil)
	_ Resolver = (*Command)(nil)
	_ Resolver = (*URL)(nil)
)

// Errors callers branch on.
var (
	// ErrUnknownAsk is returned by Decide for an id that is not pending:
	// never asked, already answered, timed out or withdrawn.
	ErrUnknownAsk = errors.New("no such pending ask")
	// ErrAnswerNotTaken is returned by Decide, with shared state, for an
	// answer no replica took within answerTakeWait: the replica that
	// asked has stopped (or cannot reach the shared state), so the call
	// it held does not run, whatever the answer.
	ErrAnswerNotTaken = errors.New("the replica that asked did not take the answer")
	// ErrClosed is returned for asks made to, or pending in, a closed Broker.
	ErrClosed = errors.New("approvals broker closed")
	// ErrFull is returned when too many asks are pending already.
	ErrFull = errors.New("too many pending asks")
)

// NewID returns a new ask id: 10 random hex digits, short enough to type
// in `mcpwarden approve ID`. It is a name, not a secret.
func NewID() string {
	var b [5]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it panics instead)
	return hex.EncodeToString(b[:])
}

// answerJSON is what a resolver answers and what the API takes.
type answerJSON struct {
	Decision string `json:"decision"`
}

// parseAnswer reads {"decision": "..."}; anything else is an error.
func parseAnswer(data []byte) (state.Answer, error) {
	var a answerJSON
	if err := json.Unmarshal(data, &a); err != nil {
		return state.Deny, fmt.Errorf("the answer is not {\"decision\": ...} JSON: %w", err)
	}
	return ParseAnswer(a.Decision)
}
