package proxy

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/approvals"
	"github.com/mcpwarden/mcpwarden/proxy/ask"
	"github.com/mcpwarden/mcpwarden/rules"
)

// DefaultAskTimeout is how long an ask waits for the human when Options
// sets none.
const DefaultAskTimeout = 60 * time.Second

// maxPendingAsks bounds the asks waiting for a multi round-trip retry in
// the embedded store (the shared state's are bounded by their time to
// live).
const maxPendingAsks = 1024

// A resolution is how a call's decision came out: forwarded or refused,
// by whom and why.
type resolution struct {
	forward   bool
	grantedBy audit.GrantedBy
	text      string // the refusal the client gets, when not forwarded
	reason    string // why it was approved or refused, for the audit event
	failure   string // what failed on the way, for the audit event's error
	// pending, when set, is returned to the client as is: a multi
	// round-trip request for the human's answer. Nothing is decided yet.
	pending *mcp.CallToolResult
}

// A noAnswer is a step of the resolver chain that did not decide: the
// client cancelled the form, accepted it without a choice, or failed; a
// resolver failed. why says which, for the audit reason; failure, when
// set, is the error.
type noAnswer struct {
	why     string
	failure string
}

// An asker resolves "ask" decisions with the human (docs/design.md, "Asking a human"): a
// standing session grant, else elicitation to the calling client, else
// each out-of-band resolver in turn (the approvals page and CLI, an
// external resolver), else the ask_fallback. A step that gives no answer
// (a cancelled form, an empty accept, an error) passes the ask to the
// next; an explicit choice or a decline decides. The model never answers:
// an answer only comes from the client's elicitation, in a multi
// round-trip retry only with the unguessable state this asker issued for
// exactly that call, or from a resolver outside MCP.
type asker struct {
	mcp       *server.MCPServer
	timeout   time.Duration
	grants    ask.Sessions
	resolvers []approvals.Resolver
	noElicit  bool // ask.elicitation: false
	// keep keeps the session grants and the multi round-trip request
	// states (the embedded store holds at most maxPendingAsks of those).
	keep ask.Keeper
	// schema returns a tool's inputSchema decoded from JSON, nil when it
	// is not known; nil itself knows no schema.
	schema func(t Tool) map[string]any
}

// resolve runs the resolver chain for c.
func (a *asker) resolve(ctx context.Context, c *call, req mcp.CallToolRequest, t ask.Target) resolution {
	key := c.grantKey()
	sess := a.grants.Session(c.session)
	ans, err := a.keep.Standing(ctx, c.session, key, t)
	if err != nil {
		return a.unavailable(c, err)
	}
	switch ans {
	case ask.AllowSession, ask.DenySession:
		return a.byGrant(c, ans)
	}

	var skipped []noAnswer
	caps, modern := clientCapabilities(ctx)
	switch {
	case c.notAsked != nil:
		skipped = append(skipped, noAnswer{why: c.notAsked.Error()})
	case a.noElicit:
		skipped = append(skipped, noAnswer{why: "asking through MCP elicitation is off (ask.elicitation: false)"})
	case caps == nil || caps.Elicitation == nil:
		skipped = append(skipped, noAnswer{why: "the client cannot be asked (no elicitation capability)"})
	case modern && c.method == methodConnect:
		// No retry of a connection will bring the answer: the round
		// trip's state would wait for nothing.
		skipped = append(skipped, noAnswer{why: "the client answers asks only by retrying a tool call, and a connection is none"})
	default:
		var res resolution
		var none *noAnswer
		if modern {
			res, none = a.roundTrip(ctx, c, req, sess, key, t)
		} else {
			res, none = a.elicit(ctx, c, sess, key, t)
		}
		if none == nil {
			return res
		}
		skipped = append(skipped, *none)
	}
	for _, r := range a.resolvers {
		res, none := a.outOfBand(ctx, c, req, r, sess, key, t)
		if none == nil {
			return withSkipped(res, skipped)
		}
		skipped = append(skipped, *none)
	}
	return withSkipped(a.fallback(c), skipped)
}

// withSkipped puts the steps that gave no answer in front of res's reason
// ("client cancelled the form; approved on the approvals page by root")
// and their failures in its error.
func withSkipped(res resolution, skipped []noAnswer) resolution {
	var whys, failures []string
	for _, s := range skipped {
		whys = append(whys, s.why)
		if s.failure != "" {
			failures = append(failures, s.failure)
		}
	}
	if res.reason != "" {
		whys = append(whys, res.reason)
	}
	if res.failure != "" {
		failures = append(failures, res.failure)
	}
	res.reason = strings.Join(whys, "; ")
	res.failure = strings.Join(failures, "; ")
	return res
}

// apply turns the human's answer on the form into a resolution,
// remembering session-wide answers.
func (a *asker) apply(ctx context.Context, c *call, sess *ask.Waiting, key ask.GrantKey, sc ask.Scope, ans ask.Answer) resolution {
	switch ans {
	case ask.AllowOnce:
		return resolution{forward: true, grantedBy: audit.GrantedByUserOnce, reason: "allowed once on the client's form"}
	case ask.AllowSession, ask.AllowFolder:
		err := a.keep.Remember(ctx, sess, c.session, key, ask.AllowSession, sc)
		return withGrantFailure(resolution{forward: true, grantedBy: audit.GrantedByUserSession, reason: "allowed for the session on the client's form (" + sc.String() + ")"}, err)
	case ask.DenySession:
		err := a.keep.Remember(ctx, sess, c.session, key, ans, sc)
		return withGrantFailure(a.refused(c, audit.GrantedByUserDenied, "denied for the session on the client's form"), err)
	default:
		return a.refused(c, audit.GrantedByUserDenied, "denied on the client's form")
	}
}

// byGrant is the resolution of a call a session grant covers.
func (a *asker) byGrant(c *call, ans ask.Answer) resolution {
	if ans == ask.DenySession {
		return a.refused(c, audit.GrantedByUserDenied, "denied for this session")
	}
	return resolution{forward: true, grantedBy: audit.GrantedByUserSession, reason: "covered by a session grant"}
}

// fallback resolves an ask no one answered: ask_fallback allow forwards
// it, anything else refuses it.
func (a *asker) fallback(c *call) resolution {
	// A flow rule's ask is never settled by ask_fallback: allow, which
	// would let the chain it breaks through whenever no one answers.
	if c.verdict.Gate != rules.GateFlow && c.policy.AskFallback(c.rulesCall()) == rules.FallbackAllow {
		return resolution{forward: true, grantedBy: audit.GrantedByNoElicitation, reason: "no one answered; ask_fallback is allow"}
	}
	return resolution{
		grantedBy: audit.GrantedByNoElicitation,
		reason:    "no one answered; ask_fallback is deny",
		text:      fmt.Sprintf("mcpwarden: %s needs approval (%s); no one approved it; not forwarded.", c.tool.Canonical, ruleName(c)),
	}
}

// timedOutAt is the refusal of an ask no one answered in time; where, when
// set, says where approvals are made.
func (a *asker) timedOutAt(c *call, where string) resolution {
	text := fmt.Sprintf("mcpwarden: %s needs approval (%s); no answer came within %s; not forwarded.", c.tool.Canonical, ruleName(c), a.timeout)
	if where != "" {
		text += " Approvals are made " + where + "."
	}
	return resolution{grantedBy: audit.GrantedByTimeout, reason: "no answer within ask.timeout", text: text}
}

// cancelled is the refusal of a call its client cancelled while it waited.
func (a *asker) cancelled(c *call, by audit.GrantedBy) resolution {
	return resolution{
		grantedBy: by,
		reason:    "cancelled by the client while waiting for approval",
		text:      fmt.Sprintf("mcpwarden: %s (%s) was cancelled while waiting for approval; not forwarded.", c.tool.Canonical, ruleName(c)),
	}
}

// refused is a refusal by a human or a resolver; why is how it was
// refused ("denied on the approvals page").
func (a *asker) refused(c *call, by audit.GrantedBy, why string) resolution {
	return resolution{
		grantedBy: by,
		reason:    why,
		text:      fmt.Sprintf("mcpwarden: %s (%s) was %s; not forwarded.", c.tool.Canonical, ruleName(c), why),
	}
}

// clientCapabilities returns what the calling client declared: per request
// for protocol 2026-07-28 and later (modern), at initialize before that.
func clientCapabilities(ctx context.Context) (caps *mcp.ClientCapabilities, modern bool) {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		return info.ClientCapabilities, true
	}
	if cs, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok {
		c := cs.GetClientCapabilities()
		return &c, false
	}
	return nil, false
}

// ruleName names the rule that asked, for messages.
func ruleName(c *call) string {
	if c.verdict.Rule == "" {
		return "rule default"
	}
	return fmt.Sprintf("rule %q", c.verdict.Rule)
}

// rulesCall is the call as the rules see it.
func (c *call) rulesCall() rules.Call {
	// The server resolves relative paths also against the roots mcpwarden
	// hands it (ListRoots: the server's workspace).
	handed, _ := c.policy.Workspace(c.tool.Server)
	return rules.Call{Profile: c.profile, Principal: c.principal, Server: c.tool.Server, Tool: c.tool.Name, Arguments: c.args, Roots: c.roots, UpstreamRoots: handed, Armed: c.armed}
}

// grantKey is what a grant for c is bound to.
func (c *call) grantKey() ask.GrantKey {
	return ask.GrantKey{Principal: c.principal, Tool: c.tool.Canonical, Rule: c.verdict.Rule}
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
