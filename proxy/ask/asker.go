package ask

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/approvals"
	"github.com/mcpwarden/mcpwarden/internal/argview"
	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/rules"
)

// A Resolution is how a call's decision came out: forwarded or refused,
// by whom and why.
type Resolution struct {
	Forward   bool
	GrantedBy audit.GrantedBy
	Text      string // the refusal the client gets, when not forwarded
	Reason    string // why it was approved or refused, for the audit event
	Failure   string // what failed on the way, for the audit event's error
	// Pending, when set, is returned to the client as is: a multi
	// round-trip request for the human's answer. Nothing is decided yet.
	Pending *mcp.CallToolResult
}

// A noAnswer is a step of the resolver chain that did not decide: the
// client cancelled the form, accepted it without a choice, or failed; a
// resolver failed. why says which, for the audit reason; failure, when
// set, is the error.
type noAnswer struct {
	why     string
	failure string
}

// An Asker resolves "ask" decisions with the human (docs/design.md, "Asking a human"): a
// standing session grant, else elicitation to the calling client, else
// each out-of-band resolver in turn (the approvals page and CLI, an
// external resolver), else the ask_fallback. A step that gives no answer
// (a cancelled form, an empty accept, an error) passes the ask to the
// next; an explicit choice or a decline decides. The model never answers:
// an answer only comes from the client's elicitation, in a multi
// round-trip retry only with the unguessable state this asker issued for
// exactly that call, or from a resolver outside MCP.
type Asker struct {
	// MCP is the server the clients are asked through (elicitation,
	// progress).
	MCP *server.MCPServer
	// Timeout bounds the wait for the human's answer.
	Timeout time.Duration
	// Resolvers answer the asks the client is not asked, in turn.
	Resolvers []approvals.Resolver
	// NoElicit never asks through MCP elicitation (ask.elicitation: false).
	NoElicit bool
	// Keep keeps the session grants and the multi round-trip request
	// states.
	Keep Keeper
	// Waiting are the asks of each session waiting for the human.
	Waiting Sessions
}

// A Question is what an ask is about: the call, who makes it, the rule
// that asked, and how the call is shown to the human.
type Question struct {
	Session   string
	Principal string
	Tool      string // canonical name
	Server    string
	// Verdict is the ask: the rule that asked, its gate and why.
	Verdict rules.Verdict
	// Client is who the client said it is; nil when it said nothing.
	Client *audit.Client
	// NotAsked, when set, says why the client is not asked (the
	// resolvers still are).
	NotAsked error
	// Connect is set for a connection (network/connect), which no retry
	// of a tool call answers.
	Connect bool
	// RootsByInput is set when the call asked the client for its roots
	// by an input request: the retry is decided again, with them.
	RootsByInput bool
	// Digest is of the canonical arguments: an answer by retry is for
	// this exact call only.
	Digest string
	// Args are the arguments as forwarded; IsPathKey says which keys hold
	// paths.
	Args      map[string]any
	IsPathKey func(key string) bool
	// View is the call as argview shows it (arguments, every form of
	// every path, the tool's inputSchema), made only when it is shown.
	View func() argview.Call
	// FallbackAllow is set when the call's ask_fallback is allow.
	FallbackAllow bool
	// Target is the call as grants see it; Summary, for a connection,
	// says what it is ("github wants to connect to api.github.com:443").
	Target  Target
	Summary string
}

// Resolve runs the resolver chain for q, about t.
func (a *Asker) Resolve(ctx context.Context, q *Question, req mcp.CallToolRequest, t Target) Resolution {
	key := q.grantKey()
	sess := a.Waiting.Session(q.Session)
	ans, err := a.Keep.Standing(ctx, q.Session, key, t)
	if err != nil {
		return a.unavailable(q, err)
	}
	switch ans {
	case state.AllowSession, state.DenySession:
		return a.byGrant(q, ans)
	}

	var skipped []noAnswer
	caps, modern := ClientCapabilities(ctx)
	switch {
	case q.NotAsked != nil:
		skipped = append(skipped, noAnswer{why: q.NotAsked.Error()})
	case a.NoElicit:
		skipped = append(skipped, noAnswer{why: "asking through MCP elicitation is off (ask.elicitation: false)"})
	case caps == nil || caps.Elicitation == nil:
		skipped = append(skipped, noAnswer{why: "the client cannot be asked (no elicitation capability)"})
	case modern && q.Connect:
		// No retry of a connection will bring the answer: the round
		// trip's state would wait for nothing.
		skipped = append(skipped, noAnswer{why: "the client answers asks only by retrying a tool call, and a connection is none"})
	default:
		var res Resolution
		var none *noAnswer
		if modern {
			res, none = a.roundTrip(ctx, q, req, sess, key, t)
		} else {
			res, none = a.elicit(ctx, q, sess, key, t)
		}
		if none == nil {
			return res
		}
		skipped = append(skipped, *none)
	}
	for _, r := range a.Resolvers {
		res, none := a.outOfBand(ctx, q, req, r, sess, key, t)
		if none == nil {
			return withSkipped(res, skipped)
		}
		skipped = append(skipped, *none)
	}
	return withSkipped(a.fallback(q), skipped)
}

// withSkipped puts the steps that gave no answer in front of res's reason
// ("client cancelled the form; approved on the approvals page by root")
// and their failures in its error.
func withSkipped(res Resolution, skipped []noAnswer) Resolution {
	var whys, failures []string
	for _, s := range skipped {
		whys = append(whys, s.why)
		if s.failure != "" {
			failures = append(failures, s.failure)
		}
	}
	if res.Reason != "" {
		whys = append(whys, res.Reason)
	}
	if res.Failure != "" {
		failures = append(failures, res.Failure)
	}
	res.Reason = strings.Join(whys, "; ")
	res.Failure = strings.Join(failures, "; ")
	return res
}

// apply turns the human's answer on the form into a Resolution,
// remembering session-wide answers.
func (a *Asker) apply(ctx context.Context, q *Question, sess *Waiting, key GrantKey, sc Scope, ans state.Answer) Resolution {
	switch ans {
	case state.AllowOnce:
		return Resolution{Forward: true, GrantedBy: audit.GrantedByUserOnce, Reason: "allowed once on the client's form"}
	case state.AllowSession, state.AllowFolder:
		err := a.Keep.Remember(ctx, sess, q.Session, key, state.AllowSession, sc)
		return withGrantFailure(Resolution{Forward: true, GrantedBy: audit.GrantedByUserSession, Reason: "allowed for the session on the client's form (" + sc.String() + ")"}, err)
	case state.DenySession:
		err := a.Keep.Remember(ctx, sess, q.Session, key, ans, sc)
		return withGrantFailure(a.refused(q, audit.GrantedByUserDenied, "denied for the session on the client's form"), err)
	default:
		return a.refused(q, audit.GrantedByUserDenied, "denied on the client's form")
	}
}

// byGrant is the Resolution of a call a session grant covers.
func (a *Asker) byGrant(q *Question, ans state.Answer) Resolution {
	if ans == state.DenySession {
		return a.refused(q, audit.GrantedByUserDenied, "denied for this session")
	}
	return Resolution{Forward: true, GrantedBy: audit.GrantedByUserSession, Reason: "covered by a session grant"}
}

// fallback resolves an ask no one answered: ask_fallback allow forwards
// it, anything else refuses it.
func (a *Asker) fallback(q *Question) Resolution {
	// A flow rule's ask is never settled by ask_fallback: allow, which
	// would let the chain it breaks through whenever no one answers.
	if q.Verdict.Gate != rules.GateFlow && q.FallbackAllow {
		return Resolution{Forward: true, GrantedBy: audit.GrantedByNoElicitation, Reason: "no one answered; ask_fallback is allow"}
	}
	text := fmt.Sprintf("mcpwarden: %s needs approval (%s); no one approved it; not forwarded.", q.Tool, q.ruleName())
	if len(a.Resolvers) == 0 {
		text += " No one could be asked: to approve asks, set ask.approvals: local in mcpwarden's config (an approvals page; its link is printed at start), or ask.resolver, or use a client that shows MCP elicitation forms."
	}
	return Resolution{
		GrantedBy: audit.GrantedByNoElicitation,
		Reason:    "no one answered; ask_fallback is deny",
		Text:      text,
	}
}

// timedOutAt is the refusal of an ask no one answered in time; where, when
// set, says where approvals are made.
func (a *Asker) timedOutAt(q *Question, where string) Resolution {
	text := fmt.Sprintf("mcpwarden: %s needs approval (%s); no answer came within %s; not forwarded.", q.Tool, q.ruleName(), a.Timeout)
	if where != "" {
		text += " Approvals are made " + where + "."
	}
	return Resolution{GrantedBy: audit.GrantedByTimeout, Reason: "no answer within ask.timeout", Text: text}
}

// cancelled is the refusal of a call its client cancelled while it waited.
func (a *Asker) cancelled(q *Question, by audit.GrantedBy) Resolution {
	return Resolution{
		GrantedBy: by,
		Reason:    "cancelled by the client while waiting for approval",
		Text:      fmt.Sprintf("mcpwarden: %s (%s) was cancelled while waiting for approval; not forwarded.", q.Tool, q.ruleName()),
	}
}

// refused is a refusal by a human or a resolver; why is how it was
// refused ("denied on the approvals page").
func (a *Asker) refused(q *Question, by audit.GrantedBy, why string) Resolution {
	return Resolution{
		GrantedBy: by,
		Reason:    why,
		Text:      fmt.Sprintf("mcpwarden: %s (%s) was %s; not forwarded.", q.Tool, q.ruleName(), why),
	}
}

// RuleName names the rule that asked, for messages.
func RuleName(rule string) string {
	if rule == "" {
		return "rule default"
	}
	return fmt.Sprintf("rule %q", rule)
}

// ruleName names the rule that asked q.
func (q *Question) ruleName() string { return RuleName(q.Verdict.Rule) }

// ClientCapabilities returns what the calling client declared: per request
// for protocol 2026-07-28 and later (modern), at initialize before that.
func ClientCapabilities(ctx context.Context) (caps *mcp.ClientCapabilities, modern bool) {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		return info.ClientCapabilities, true
	}
	if cs, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok {
		c := cs.GetClientCapabilities()
		return &c, false
	}
	return nil, false
}

// grantKey is what a grant for q is bound to.
func (q *Question) grantKey() GrantKey {
	return GrantKey{Principal: q.Principal, Tool: q.Tool, Rule: q.Verdict.Rule}
}

// unavailable is the refusal of a call that needs the shared state to be
// decided (its session grants) while it cannot be reached.
func (a *Asker) unavailable(q *Question, err error) Resolution {
	return Resolution{
		GrantedBy: audit.GrantedByRule,
		Reason:    "the shared state cannot be reached: refused rather than decided from one replica's memory",
		Failure:   err.Error(),
		Text:      fmt.Sprintf("mcpwarden: %s needs approval (%s); mcpwarden cannot reach its shared state (state.url) to decide it; not forwarded.", q.Tool, q.ruleName()),
	}
}

// withGrantFailure notes on res that the session grant it gave could not
// be shared: the call itself goes on as the human answered, and other
// replicas ask again.
func withGrantFailure(res Resolution, err error) Resolution {
	if err == nil {
		return res
	}
	res.Reason += "; the session grant could not be shared, so other replicas will ask again"
	if res.Failure != "" {
		res.Failure += "; "
	}
	res.Failure += err.Error()
	return res
}
