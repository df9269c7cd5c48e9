// Package audit records what mcpwarden decided and did as a tamper-evident
// JSON Lines log. It has the Event type, the Sink interface and its sinks, the
// Redactor that keeps secrets out of the log and out of stderr, and Verify,
// which checks the hash chain that links every line to the one before it. It
// never decides anything: the proxy tells it what happened.
package audit

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/enumtext"
)

// A Kind is the type of an Event. The zero value is not a valid kind, so an
// event whose kind was forgotten is refused by Log.Write instead of being
// recorded as something it is not.
type Kind uint8

// The kinds of events, with their JSON names in the comments.
const (
	KindDecision     Kind = iota + 1 // "decision": written before a call is forwarded (or instead of it)
	KindResult                       // "result": written after a forwarded call returns
	KindToolsChanged                 // "tools_changed": an upstream's tool list changed
	KindUpstream                     // "upstream": an upstream connected, crashed or restarted
	KindLost                         // "lost": events that could not be written, counted in Lost, the first failure in Error
	KindCheckpoint                   // "checkpoint": a signed checkpoint of the lines before it (Checkpoint, Subtrees)

	// "policy_changed": a reload changed the policy (PolicySHA256,
	// PreviousPolicySHA256; Changed and Widened count the recent decisions
	// that the new policy decides otherwise, and allows, when replayed).
	KindPolicyChanged
)

var kindNames = [...]string{
	KindDecision:     "decision",
	KindResult:       "result",
	KindToolsChanged: "tools_changed",
	KindUpstream:     "upstream",
	KindLost:         "lost",
	KindCheckpoint:   "checkpoint",

	KindPolicyChanged: "policy_changed",
}

// String returns the JSON name of k, or "Kind(N)" for an invalid kind.
func (k Kind) String() string {
	if k.valid() {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

func (k Kind) valid() bool { return k >= KindDecision && int(k) < len(kindNames) }

// MarshalText returns the JSON name of k; an invalid kind is an error.
func (k Kind) MarshalText() ([]byte, error) {
	if !k.valid() {
		return nil, fmt.Errorf("invalid audit event kind %d", uint8(k))
	}
	return []byte(kindNames[k]), nil
}

// UnmarshalText sets k from its JSON name; an unknown name is an error.
func (k *Kind) UnmarshalText(b []byte) error {
	for i, n := range kindNames {
		if n != "" && n == string(b) {
			*k = Kind(i)
			return nil
		}
	}
	return fmt.Errorf("unknown audit event kind %q", b)
}

// The values of Event.Decision. They are the texts of rules.Decision; audit
// keeps strings so that it does not depend on the rules package.
const (
	DecisionAllow = "allow"
	DecisionAsk   = "ask"
	DecisionDeny  = "deny"
)

// A GrantedBy says what settled a decision: a rule, the user, a timeout, a
// channel of approval. Its text is the audit event's granted_by value; the
// zero value, GrantedByNone, is "not said" and is not written.
type GrantedBy uint8

// The values of Event.GrantedBy, with their texts in the comments.
const (
	GrantedByNone          GrantedBy = iota // "": not said (an event that settles nothing)
	GrantedByRule                           // "rule": a rule (or the default) decided alone
	GrantedByUserOnce                       // "user_once": the user allowed this one call
	GrantedByUserSession                    // "user_session": the user allowed the tool for the session (or a standing grant did)
	GrantedByUserDenied                     // "user_denied": the user was asked and denied
	GrantedByTimeout                        // "timeout": the user was asked and did not answer in time
	GrantedByNoElicitation                  // "no_elicitation": asking was needed but the client cannot be asked
	GrantedByApprovalPage                   // "approval_page": answered on the local approvals page (ask.approvals: local)
	GrantedByApprovalCLI                    // "approval_cli": answered with mcpwarden approve / deny
	GrantedByResolver                       // "resolver": answered by the external resolver (ask.resolver)
	GrantedByShadow                         // "shadow": shadow mode (enforce: shadow) let through what the rules would have asked about or denied
)

var grantedByNames = enumtext.Names[GrantedBy]{
	GrantedByNone: "", GrantedByRule: "rule", GrantedByUserOnce: "user_once", GrantedByUserSession: "user_session",
	GrantedByUserDenied: "user_denied", GrantedByTimeout: "timeout", GrantedByNoElicitation: "no_elicitation",
	GrantedByApprovalPage: "approval_page", GrantedByApprovalCLI: "approval_cli", GrantedByResolver: "resolver",
	GrantedByShadow: "shadow",
}

// String returns g's text, or "GrantedBy(N)" for an invalid value.
func (g GrantedBy) String() string { return grantedByNames.String(g, "GrantedBy") }

// MarshalText returns g's text; an invalid value is an error.
func (g GrantedBy) MarshalText() ([]byte, error) { return grantedByNames.Marshal(g, "granted_by") }

// UnmarshalText reads a granted_by text; an unknown one is an error and
// leaves GrantedByNone.
func (g *GrantedBy) UnmarshalText(b []byte) error {
	if !grantedByNames.Set(g, string(b)) {
		return fmt.Errorf("unknown granted_by %q", b)
	}
	return nil
}

// An Outcome says how a request that was asked ended: forwarded (or its
// result passed on) or refused. Its text is the audit event's outcome
// value; the zero value, OutcomeNone, is "not asked" and is not written.
type Outcome uint8

// The values of Event.Outcome, with their texts in the comments.
const (
	OutcomeNone    Outcome = iota // "": the request was not asked about
	OutcomeAllowed                // "allowed": the ask was settled for the request: it was forwarded
	OutcomeRefused                // "refused": the ask was settled against it, or never settled: nothing was forwarded
)

var outcomeNames = enumtext.Names[Outcome]{OutcomeNone: "", OutcomeAllowed: "allowed", OutcomeRefused: "refused"}

// String returns o's text, or "Outcome(N)" for an invalid value.
func (o Outcome) String() string { return outcomeNames.String(o, "Outcome") }

// MarshalText returns o's text; an invalid value is an error.
func (o Outcome) MarshalText() ([]byte, error) { return outcomeNames.Marshal(o, "outcome") }

// UnmarshalText reads an outcome's text; an unknown one is an error and
// leaves OutcomeNone.
func (o *Outcome) UnmarshalText(b []byte) error {
	if !outcomeNames.Set(o, string(b)) {
		return fmt.Errorf("unknown outcome %q: want allowed or refused", b)
	}
	return nil
}

// OutcomeOf is the Outcome of an asked request that was forwarded
// (allowed) or not.
func OutcomeOf(allowed bool) Outcome {
	if allowed {
		return OutcomeAllowed
	}
	return OutcomeRefused
}

// The values of Event.Detail for KindUpstream events.
const (
	UpstreamConnect = "connect"
	UpstreamCrash   = "crash"
	UpstreamRestart = "restart"
)

// A Client is the calling MCP client as it named itself in initialize. Both
// fields are untrusted input and are cut like any other long string.
type Client struct {
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
}

// An Event is one line of the audit log. The caller fills in what happened;
// Log.Write sets Time (if zero) and ID (if empty), always sets PrevSHA256, and
// redacts Arguments, ResultPreview, Error, Detail and Client on a copy, so the
// caller passes raw values and never redacts itself. Log.Write also sets
// Replica to its own, whatever the caller put there, so that a replica's
// chain names only it. Fields are written in
// this order; empty optional fields are omitted, prev_sha256 never is.
type Event struct {
	Time          time.Time      `json:"time"`                  // UTC, RFC 3339 with nanoseconds
	Event         Kind           `json:"event"`                 // required
	ID            string         `json:"id"`                    // unique; sortable by time when set by Log.Write
	Replica       string         `json:"replica,omitempty"`     // the replica whose Log wrote the event (Options.Replica); set by Log.Write, never by the caller
	DecisionID    string         `json:"decision_id,omitempty"` // of a result: the id of its decision event
	Session       string         `json:"session,omitempty"`
	Client        *Client        `json:"client,omitempty"`
	Principal     string         `json:"principal,omitempty"` // who sent the request: "token:<hash prefix>", "local", "anonymous"
	Profile       string         `json:"profile,omitempty"`
	Server        string         `json:"server,omitempty"`
	Method        string         `json:"method,omitempty"` // the MCP method: tools/call, resources/read, …
	Tool          string         `json:"tool,omitempty"`   // canonical mcp:<server>:<tool>
	WireName      string         `json:"wire_name,omitempty"`
	Shadow        bool           `json:"shadow,omitempty"`     // of a decision made in shadow mode (enforce: shadow): Decision and Rule are what the rules would have done, and the request went on (GrantedByShadow when that was not an allow)
	Decision      string         `json:"decision,omitempty"`   // DecisionAllow, DecisionAsk or DecisionDeny
	Rule          string         `json:"rule,omitempty"`       // the deciding rule's text, or "default"
	ArmedBy       string         `json:"armed_by,omitempty"`   // of a decision a flow rule made: the id of the decision event of the call whose result armed it
	GrantedBy     GrantedBy      `json:"granted_by,omitempty"` // one of the GrantedBy constants
	Outcome       Outcome        `json:"outcome,omitempty"`    // of an asked request: how the ask ended, whoever settled it (GrantedBy)
	Reason        string         `json:"reason,omitempty"`     // why a request was approved or refused; Error is only for failures
	Arguments     map[string]any `json:"arguments,omitempty"`
	DurationMS    *int64         `json:"duration_ms,omitempty"`
	IsError       *bool          `json:"is_error,omitempty"`
	ResultBytes   *int64         `json:"result_bytes,omitempty"`
	ResultPreview string         `json:"result_preview,omitempty"`
	Lost          int64          `json:"lost,omitempty"` // of a lost event: how many events were not written
	Error         string         `json:"error,omitempty"`
	Detail        string         `json:"detail,omitempty"`     // upstream: connect|crash|restart; tools_changed: a summary
	Instance      string         `json:"instance,omitempty"`   // of a result from an isolated server: which child served it
	Sandbox       string         `json:"sandbox,omitempty"`    // of an upstream event: what confines the server's process ("off" when nothing does)
	Checkpoint    string         `json:"checkpoint,omitempty"` // of a checkpoint: the signed note of the lines before it (ParseCheckpoint)
	Subtrees      []string       `json:"subtrees,omitempty"`   // of a checkpoint: the roots of the tree's perfect subtrees, largest first, to continue it from here
	PolicySHA256  string         `json:"policy_sha256,omitempty"`

	// Of a policy_changed event: the hash of the policy the reload
	// replaced, and how many recent decisions the new one decides
	// otherwise (Changed) and allows where the old one asked or denied
	// (Widened).
	PreviousPolicySHA256 string `json:"previous_policy_sha256,omitempty"`
	Changed              int64  `json:"changed,omitempty"`
	Widened              int64  `json:"widened,omitempty"`

	PrevSHA256 string `json:"prev_sha256"` // hex SHA-256 of the previous line; "" for the first line of a log
}

// NewID returns a new event id: 32 hex digits, the first 12 of which are the
// milliseconds since the Unix epoch of t, the rest random, so ids sort by time
// (to the millisecond) and never collide in practice.
func NewID(t time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixMilli())<<16)
	_, _ = rand.Read(b[6:]) // crypto/rand.Read never fails (it panics instead)
	return hex.EncodeToString(b[:])
}
