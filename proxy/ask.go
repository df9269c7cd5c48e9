package proxy

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/approvals"
	"github.com/mcpwarden/mcpwarden/rules"
)

// DefaultAskTimeout is how long an ask waits for the human when Options
// sets none.
const DefaultAskTimeout = 60 * time.Second

// approvalID keys the approval form in a multi round-trip input request.
const approvalID = "mcpwarden_approval"

// maxPendingAsks bounds the asks waiting for a multi round-trip retry.
const maxPendingAsks = 1024

// maxArgsShown bounds the arguments shown in an approval message.
const maxArgsShown = 1500

// progressEvery is how often a call waiting for an out-of-band answer
// tells the client where to answer, when it asked for progress.
const progressEvery = 5 * time.Second

// A resolution is how a call's decision came out: forwarded or refused,
// and by whom.
type resolution struct {
	forward   bool
	grantedBy string
	text      string // the refusal the client gets, when not forwarded
	note      string // for the audit event's error field
	// pending, when set, is returned to the client as is: a multi
	// round-trip request for the human's answer. Nothing is decided yet.
	pending *mcp.CallToolResult
}

// An asker resolves "ask" decisions with the human: a standing session
// grant, else elicitation to the calling client, else the first
// out-of-band resolver (the approvals page, an external resolver), else
// the ask_fallback. The model never answers: an answer only comes from the
// client's elicitation, in a multi round-trip retry only with the
// unguessable state this asker issued for exactly that call, or from a
// resolver outside MCP.
type asker struct {
	mcp       *server.MCPServer
	timeout   time.Duration
	grants    grantStore
	resolvers []approvals.Resolver
	noElicit  bool // ask.elicitation: false

	mu      sync.Mutex
	pending map[string]*pendingAsk // by request state
}

// A pendingAsk is an ask sent to a client that answers by retrying the
// call (protocol 2026-07-28 multi round-trip).
type pendingAsk struct {
	session string
	key     grantKey
	digest  string // of the canonical arguments: the answer is for this call only
	paths   []string
	known   bool
	expires time.Time
}

func (a *asker) resolve(ctx context.Context, c *call, req mcp.CallToolRequest, redact func(map[string]any) map[string]any) resolution {
	key := grantKey{tool: c.tool.Canonical, rule: c.verdict.Rule}
	paths, known := c.policy.Paths(c.rulesCall())
	sess := a.grants.session(c.session)
	switch sess.standing(key, paths, known) {
	case answerAllowSession:
		return resolution{forward: true, grantedBy: audit.GrantedByUserSession}
	case answerDenySession:
		return a.refused(c, audit.GrantedByUserDenied, "the user denied it for this session")
	}

	caps, modern := clientCapabilities(ctx)
	if a.noElicit || caps == nil || caps.Elicitation == nil {
		if len(a.resolvers) > 0 {
			return a.outOfBand(ctx, c, req, sess, key, paths, known, redact)
		}
		return a.fallback(c)
	}
	params := a.approvalRequest(c, redact)
	if modern {
		return a.roundTrip(c, req, key, paths, known, params)
	}

	w := sess.wait(key, paths, known)
	defer sess.unwait(w)
	ectx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	type reply struct {
		res *mcp.ElicitationResult
		err error
	}
	replies := make(chan reply, 1)
	received := false
	defer func() { // the request goroutine ends with ectx
		cancel()
		if !received {
			<-replies
		}
	}()
	go func() {
		res, err := a.mcp.RequestElicitation(ectx, mcp.ElicitationRequest{
			Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)},
			Params:  params,
		})
		replies <- reply{res, err}
	}()
	var ans answer
	select {
	case r := <-replies:
		received = true
		switch {
		case r.err != nil && ctx.Err() != nil:
			return resolution{grantedBy: audit.GrantedByUserDenied, text: fmt.Sprintf("mcpwarden: the call to %s was cancelled while waiting for approval; nothing was forwarded.", c.tool.Canonical), note: "cancelled by the client while waiting for approval"}
		case r.err != nil && errors.Is(ectx.Err(), context.DeadlineExceeded):
			return a.timedOut(c)
		case r.err != nil:
			return a.refused(c, audit.GrantedByNoElicitation, fmt.Sprintf("asking the client failed (%v)", r.err))
		}
		ans = answerOf(r.res)
	case ans = <-w.done:
	}
	return a.apply(c, sess, key, scopeOf(paths, known), ans)
}

// apply turns the human's answer into a resolution, remembering session-wide
// answers.
func (a *asker) apply(c *call, sess *session, key grantKey, sc scope, ans answer) resolution {
	switch ans {
	case answerAllowOnce:
		return resolution{forward: true, grantedBy: audit.GrantedByUserOnce}
	case answerAllowSession:
		sess.remember(key, ans, sc)
		return resolution{forward: true, grantedBy: audit.GrantedByUserSession}
	case answerDenySession:
		sess.remember(key, ans, sc)
		return a.refused(c, audit.GrantedByUserDenied, "the user denied it for this session")
	default:
		return a.refused(c, audit.GrantedByUserDenied, "the user denied it")
	}
}

// roundTrip asks a 2026-07-28 client by returning an input request; the
// client retries the call with the answer and the state issued here.
func (a *asker) roundTrip(c *call, req mcp.CallToolRequest, key grantKey, paths []string, known bool, params mcp.ElicitationParams) resolution {
	digest := argsDigest(c.canonical)
	if state := req.Params.RequestState; state != "" {
		a.mu.Lock()
		p, ok := a.pending[state]
		delete(a.pending, state) // single use
		a.mu.Unlock()
		if !ok || p.session != c.session || p.key != key || p.digest != digest {
			return a.refused(c, audit.GrantedByUserDenied, "the approval does not match a pending ask for this exact call")
		}
		if time.Now().After(p.expires) {
			return a.timedOut(c)
		}
		res := server.ElicitationResponse(req.Params.InputResponses, approvalID)
		return a.apply(c, a.grants.session(c.session), key, scopeOf(p.paths, p.known), answerOf(res))
	}
	state := rand.Text()
	now := time.Now()
	a.mu.Lock()
	if a.pending == nil {
		a.pending = map[string]*pendingAsk{}
	}
	for s, p := range a.pending {
		if now.After(p.expires) {
			delete(a.pending, s)
		}
	}
	full := len(a.pending) >= maxPendingAsks
	if !full {
		a.pending[state] = &pendingAsk{session: c.session, key: key, digest: digest, paths: paths, known: known, expires: now.Add(a.timeout)}
	}
	a.mu.Unlock()
	if full {
		return a.refused(c, audit.GrantedByNoElicitation, "too many asks are waiting for an answer")
	}
	return resolution{pending: server.NewInputRequestBuilder(state).Elicit(approvalID, params).ToolResult()}
}

// outOfBand holds the ask while the first resolver decides it, telling a
// client that asked for progress where to answer. A session grant given
// meanwhile (to a concurrent call) settles it too.
func (a *asker) outOfBand(ctx context.Context, c *call, req mcp.CallToolRequest, sess *session, key grantKey, paths []string, known bool, redact func(map[string]any) map[string]any) resolution {
	r := a.resolvers[0]
	areq := approvals.Request{
		ID:        approvals.NewID(),
		Tool:      c.tool.Canonical,
		Server:    c.tool.Server,
		Session:   c.session,
		Rule:      c.verdict.Rule,
		Gate:      c.verdict.Gate,
		Arguments: redact(c.args),
		AskedAt:   time.Now(),
	}
	if c.client != nil {
		areq.Client = strings.TrimSpace(c.client.Name + " " + c.client.Version)
	}
	where := "by the external resolver"
	if l, ok := r.(approvals.Locator); ok {
		where = l.Where(areq.ID)
	}

	w := sess.wait(key, paths, known)
	defer sess.unwait(w)
	rctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	type reply struct {
		d   approvals.Decision
		err error
	}
	replies := make(chan reply, 1)
	received := false
	defer func() { // the resolver's goroutine ends with rctx
		cancel()
		if !received {
			<-replies
		}
	}()
	go func() {
		d, err := r.Resolve(rctx, areq)
		replies <- reply{d, err}
	}()
	defer a.progress(ctx, req, fmt.Sprintf("mcpwarden: %s is waiting for approval %s", c.tool.Canonical, where))()

	sc := scopeOf(paths, known)
	select {
	case rep := <-replies:
		received = true
		by := cmp.Or(string(rep.d.Via), audit.GrantedByResolver)
		switch {
		case ctx.Err() != nil:
			return resolution{grantedBy: by, text: fmt.Sprintf("mcpwarden: the call to %s was cancelled while waiting for approval; nothing was forwarded.", c.tool.Canonical), note: "cancelled by the client while waiting for approval"}
		case rep.err != nil && errors.Is(rctx.Err(), context.DeadlineExceeded):
			return a.timedOutAt(c, where)
		case rep.err != nil:
			return a.refused(c, by, fmt.Sprintf("asking out of band failed (%v)", rep.err))
		}
		return a.decided(c, sess, key, sc, rep.d)
	case ans := <-w.done:
		return a.apply(c, sess, key, sc, ans)
	}
}

// decided turns an out-of-band decision into a resolution, remembering a
// session grant. granted_by names the channel; the note names who.
func (a *asker) decided(c *call, sess *session, key grantKey, sc scope, d approvals.Decision) resolution {
	by := cmp.Or(string(d.Via), audit.GrantedByResolver)
	who := cmp.Or(d.Who, by)
	switch d.Answer {
	case approvals.AllowOnce:
		return resolution{forward: true, grantedBy: by, note: "allowed once by " + who}
	case approvals.AllowSession:
		sess.remember(key, answerAllowSession, sc)
		return resolution{forward: true, grantedBy: by, note: "allowed for the session by " + who}
	default:
		how := "by the external resolver"
		switch d.Via {
		case approvals.ViaPage:
			how = "on the approvals page"
		case approvals.ViaCLI:
			how = "with mcpwarden deny"
		}
		res := a.refused(c, by, "it was denied "+how)
		res.note = "denied by " + who
		return res
	}
}

// progress sends the client progress notifications with msg, now and
// every progressEvery, if the call carries a progress token. The returned
// func stops them and waits until they have stopped.
func (a *asker) progress(ctx context.Context, req mcp.CallToolRequest, msg string) (stop func()) {
	if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
		return func() {}
	}
	token := req.Params.Meta.ProgressToken
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		start := time.Now()
		for {
			// Best effort: a client that cannot take it still gets its answer.
			_ = a.mcp.SendNotificationToClient(pctx, string(mcp.MethodNotificationProgress), map[string]any{
				"progressToken": token,
				"progress":      time.Since(start).Seconds(),
				"total":         a.timeout.Seconds(),
				"message":       msg,
			})
			select {
			case <-pctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// fallback resolves an ask that cannot reach a human: ask_fallback allow
// forwards it, anything else refuses it with how to allow the tool.
func (a *asker) fallback(c *call) resolution {
	why := "it did not declare the MCP elicitation capability"
	if a.noElicit {
		why = "asking through MCP elicitation is off (ask.elicitation: false)"
	}
	if c.policy.AskFallback(c.rulesCall()) == "allow" {
		return resolution{forward: true, grantedBy: audit.GrantedByNoElicitation, note: "client cannot be asked; ask_fallback is allow"}
	}
	return resolution{
		grantedBy: audit.GrantedByNoElicitation,
		note:      "client cannot be asked (" + why + "); denied",
		text: fmt.Sprintf("mcpwarden: %s needs approval (%s), but this client cannot be asked: %s. The call was denied and nothing was forwarded. %s Or set ask.approvals: local to approve such calls on a local web page or with mcpwarden approve.",
			c.tool.Canonical, ruleWhere(c), why, howToAllow(c)),
	}
}

func (a *asker) timedOut(c *call) resolution { return a.timedOutAt(c, "") }

// timedOutAt is the refusal of an ask no one answered in time; where, when
// set, says where approvals are made.
func (a *asker) timedOutAt(c *call, where string) resolution {
	text := fmt.Sprintf("mcpwarden: %s needs approval (%s), and no answer came within %s, so the call was denied and nothing was forwarded.", c.tool.Canonical, ruleWhere(c), a.timeout)
	if where != "" {
		text += " Approvals are made " + where + "."
	}
	return resolution{
		grantedBy: audit.GrantedByTimeout,
		note:      "no answer within ask.timeout",
		text:      text,
	}
}

func (a *asker) refused(c *call, by, why string) resolution {
	return resolution{
		grantedBy: by,
		note:      why,
		text:      fmt.Sprintf("mcpwarden: %s needs approval (%s), and %s; nothing was forwarded.", c.tool.Canonical, ruleWhere(c), why),
	}
}

// approvalRequest is the form shown to the human: the tool, the rule and
// the redacted arguments, short enough for one screen.
func (a *asker) approvalRequest(c *call, redact func(map[string]any) map[string]any) mcp.ElicitationParams {
	args, err := json.MarshalIndent(redact(c.args), "", "  ")
	shown := string(args)
	if err != nil {
		shown = "(arguments cannot be shown)"
	}
	if len(shown) > maxArgsShown {
		shown = shown[:maxArgsShown] + "\n… (cut)"
	}
	msg := fmt.Sprintf("Allow this tool call?\n\nTool: %s\nAsked by: %s\nArguments:\n%s", c.tool.Canonical, ruleWhere(c), shown)
	return mcp.ElicitationParams{
		Message: msg,
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"decision": map[string]any{
					"type":        "string",
					"title":       "Decision",
					"description": "Allow or deny " + c.tool.Canonical,
					"enum":        []string{"allow_once", "allow_session", "deny", "deny_session"},
					"enumNames":   []string{"Allow once", "Allow for this session", "Deny", "Deny for this session"},
				},
			},
			"required": []string{"decision"},
		},
	}
}

// answerOf reads the form's answer. Anything but an accepted, known
// decision is a deny: decline, cancel, an empty or unknown value.
func answerOf(res *mcp.ElicitationResult) answer {
	if res == nil || res.Action != mcp.ElicitationResponseActionAccept {
		return answerDeny
	}
	content, _ := res.Content.(map[string]any)
	s, _ := content["decision"].(string)
	if a, ok := answerValues[s]; ok {
		return a
	}
	return answerDeny
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

func argsDigest(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// ruleWhere names the rule that asked, for messages.
func ruleWhere(c *call) string {
	if c.verdict.Rule == "default" || c.verdict.Rule == "" {
		return "no rule matched and the default is ask"
	}
	return fmt.Sprintf("rule %q in %s", c.verdict.Rule, c.verdict.Gate)
}

// howToAllow says what to change in the config to let the call through.
// An allow rule cannot override an ask rule (ask beats allow), so for an
// explicit ask rule the way is to narrow it or set ask_fallback.
func howToAllow(c *call) string {
	if c.verdict.Rule == "default" || c.verdict.Rule == "" {
		return fmt.Sprintf("To allow it without asking, add %q to policy.allow (or to servers.%s.policy.allow).", c.tool.Canonical, c.tool.Server)
	}
	return fmt.Sprintf("To allow it, remove or narrow the ask rule %q in %s (an allow rule cannot override an ask rule), or set %s.ask_fallback: allow to let asked calls through when no one can be asked.", c.verdict.Rule, c.verdict.Gate, c.verdict.Gate)
}

// rulesCall is the call as the rules see it.
func (c *call) rulesCall() rules.Call {
	return rules.Call{Profile: c.profile, Server: c.tool.Server, Tool: c.tool.Name, Arguments: c.args}
}
