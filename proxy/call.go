package proxy

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/argschema"
	"github.com/mcpwarden/mcpwarden/internal/jsonargs"
	"github.com/mcpwarden/mcpwarden/internal/telemetry"
	"github.com/mcpwarden/mcpwarden/proxy/ask"
	"github.com/mcpwarden/mcpwarden/proxy/inputrelay"
	"github.com/mcpwarden/mcpwarden/proxy/naming"
	"github.com/mcpwarden/mcpwarden/proxy/scan"
	"github.com/mcpwarden/mcpwarden/proxy/wire"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// A call is one tools/call on its way through the proxy.
type call struct {
	tool      naming.Tool
	method    mcp.MCPMethod // "" is tools/call; see newRequest
	principal string        // who sent it (see principalOf)
	profile   string
	snap      *snapshot     // the configuration the call started under
	policy    *rules.Policy // snap.policy
	session   string
	client    *audit.Client
	args      map[string]any
	roots     []string // the client's roots, when the policy uses them
	// rootsByInput is set when the roots came in this retry's input
	// responses: an ask's input request asks for them again.
	rootsByInput bool
	canonical    []byte // the arguments as forwarded
	argsErr      error
	verdict      rules.Verdict
	shadow       bool            // decided in shadow mode (see shadowed)
	grantedBy    audit.GrantedBy // how the decision was settled
	outcome      audit.Outcome   // of an asked call: how the ask ended
	reason       string          // why a call was refused or let through, for the audit event
	failure      string          // what failed while deciding, for the audit event's error
	decision     string          // the id of the decision event, set by decisionEvent; results name it
	hold         *wire.Hold      // the bytes the call holds in the in-flight budget

	// notAsked, when set, is why the client is not asked about the call
	// (an egress connection that cannot be told to be its session's): an
	// ask goes to the out-of-band resolvers only.
	notAsked error

	armed  []rules.Arming // the labels its session had armed when it started
	labels []string       // the labels it carries, armed once it returns

	// answers, when set, are what a retry of a 2026-07-28 client sends
	// the upstream that asked it for input; rounds counts the call's
	// round trips (see inputRelay).
	answers *upstream.InputAnswers
	rounds  int
}

func (s *Server) newCall(ctx context.Context, t naming.Tool, req mcp.CallToolRequest) *call {
	snap := s.current()
	c := &call{tool: t, snap: snap, policy: snap.policy, principal: s.principalOf(ctx), profile: s.profileOf(ctx)}
	if cs := server.ClientSessionFromContext(ctx); cs != nil {
		c.session = cs.SessionID()
		if ci, ok := cs.(server.SessionWithClientInfo); ok {
			if info := ci.GetClientInfo(); info.Name != "" || info.Version != "" {
				c.client = &audit.Client{Name: info.Name, Version: info.Version}
			}
		}
	}
	if c.policy.UsesLabels() {
		c.armed = s.armedFor(ctx, c)
	}
	raw := []byte(req.Params.RawArguments)
	if len(raw) == 0 && req.Params.Arguments != nil {
		var err error
		if raw, err = json.Marshal(req.Params.Arguments); err != nil {
			c.argsErr = err
			return c
		}
	}
	if len(raw) >= wire.LiftMin {
		// Parsing large arguments takes a few times their size for a
		// moment; a few at a time keep that from adding up.
		defer s.inflight.Parsing()()
	}
	c.args, c.canonical, c.argsErr = jsonargs.Parse(raw)
	if bytes.Equal(c.canonical, raw) {
		c.canonical = raw // already canonical: keep one copy, not two
	}
	return c
}

// handler is the tools/call handler for one tool, whose arguments are
// checked against schema (its compiled inputSchema) before any rule. It
// decides, writes the decision to the audit log before anything is
// forwarded, then forwards an allowed call with exactly the arguments that
// were checked. Each call is
// a request span, with a decision span and, when forwarded, an upstream
// call span as children, and is counted once in the decision metric when
// it is decided (a pending multi round-trip ask is counted on its retry).
func (s *Server) handler(t naming.Tool, schema *argschema.Schema) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (result *mcp.CallToolResult, err error) {
		// Arguments lifted out of the message are taken first, so that
		// what they hold is given back however the call ends.
		l := wire.TakeLifted(ctx, req.Params.RawArguments)
		defer l.Release()
		ctx, leave, ok := s.drain.EnterAs(ctx, passKey(ctx, t.Wire))
		if !ok {
			return mcp.NewToolResultError(fmt.Sprintf("%v; %s was not forwarded", ErrShuttingDown, t.Canonical)), nil
		}
		defer leave()
		if cause := context.Cause(ctx); errors.Is(cause, ErrShuttingDown) {
			return mcp.NewToolResultError(fmt.Sprintf("%v; %s was not forwarded", cause, t.Canonical)), nil
		}
		var h *wire.Hold
		if l != nil {
			// Over stdio counted when the message was read; over HTTP
			// with the body.
			req.Params.RawArguments, req.Params.Arguments = l.Raw, nil
			h, err = l.Hold, l.Err
		}
		if h == nil && err == nil {
			h, err = s.inflight.AdmitCall(ctx, int64(len(req.Params.RawArguments)))
		}
		if err != nil {
			return mcp.NewToolResultError(fmt.Sprintf("mcpwarden refused %s: %v; nothing was forwarded", t.Canonical, err)), nil
		}
		defer h.Release()
		ctx = s.tel.ExtractMeta(ctx, req.Params.Meta)
		c := s.newCall(ctx, t, req)
		c.checkTypes(schema)
		c.hold = h
		if rs := req.Params.RequestState; inputrelay.IsState(rs) || isHeldState(rs) {
			// The client answers what the upstream asked during its call.
			ctx, span := s.tel.StartRequest(ctx, telemetry.Request{Method: string(mcp.MethodToolsCall), Tool: t.Wire, Session: c.session})
			defer func() { span.End(spanErr(result, err)) }()
			return s.input.continueRetry(ctx, c, req)
		}
		if c.argsErr == nil && c.policy.UsesRoots() {
			caps, modern := ask.ClientCapabilities(ctx)
			var input *mcp.CallToolResult
			if c.roots, c.rootsByInput, input = s.roots.For(ctx, c.session, caps, modern, req); input != nil {
				return input, nil // the client's roots first; decided when it retries
			}
		}
		ctx, span := s.tel.StartRequest(ctx, telemetry.Request{Method: string(mcp.MethodToolsCall), Tool: t.Wire, Session: c.session})
		defer func() { span.End(spanErr(result, err)) }()
		res, err := s.admit(ctx, c, req, askWithRetry)
		switch {
		case err != nil:
			return mcp.NewToolResultError("mcpwarden refused " + err.Error()), nil
		case res.Pending != nil:
			return res.Pending, nil // asked; decided when the client retries
		case !res.Forward:
			c.logRefusal(s.logger)
			return mcp.NewToolResultError(res.Text), nil
		}
		return s.forward(ctx, c, req)
	}
}

// resolveAsk resolves an ask with the human, counted as a pending ask
// while it runs. The count covers every resolution, including those a
// standing session grant answers at once and multi round-trip asks that
// return pending at once: the asker does not say which it was.
func (s *Server) resolveAsk(ctx context.Context, c *call, req mcp.CallToolRequest) ask.Resolution {
	s.tel.AskStarted()
	defer s.tel.AskEnded()
	t := s.target(c)
	return s.asker.Resolve(ctx, s.question(c, t), req, t)
}

// forward sends the call upstream and records its result, which the
// client gets as the upstream encoded it. The upstream call span is the
// upstream's parent: its trace context goes in params._meta, and in the
// headers of an HTTP upstream. What the upstream asks for during the call
// of a 2026-07-28 client is relayed to that client by the call's result
// (package inputrelay; inputRelay).
func (s *Server) forward(ctx context.Context, c *call, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	// Decided and audited: only c.canonical goes on, and the decoded copy
	// can be freed. An isolated server picks its caller's child by route.
	c.args = nil
	u := &upstreamCall{req: req, route: &upstream.Route{Principal: c.principal, Session: c.session}}
	uctx, span := s.tel.StartUpstreamCall(ctx, c.tool.Server, c.tool.Name)
	u.span = span
	// A client of 2026-07-28 is relayed what the upstream asks for
	// during its call (inputRelay); one of the handshake is sent it.
	caps, relays := ask.ClientCapabilities(ctx)
	uctx = withCallerReach(uctx, caps, relays)
	u.params = mcp.CallToolParams{Name: c.tool.Name, RawArguments: c.canonical, Meta: s.tel.InjectMeta(uctx, req.Params.Meta)}
	u.start = time.Now()
	modernUpstream := relays && mcp.IsModernProtocol(s.upstream.Protocol(c.tool.Server))
	switch {
	case !relays || !modernUpstream && reachOf(caps) == (upstream.Reach{}):
		// A client of the handshake is sent the upstream's requests; one of
		// 2026-07-28 that declared neither elicitation nor sampling can
		// be sent none, so its call to an upstream of the handshake needs
		// no holding.
		raw, err := s.relay.callUpstream(uctx, c.tool.Server, u.route, u.params)
		return s.finish(ctx, c, u, raw, err)
	case !modernUpstream:
		return s.input.hold(ctx, uctx, c, u)
	}
	uctx = upstream.WithInputRelay(uctx)
	raw, err := s.relay.callUpstream(withAnswers(uctx, c.answers), c.tool.Server, u.route, u.params)
	for err == nil && upstream.AsksForInput(raw) {
		var asked *mcp.CallToolResult
		if asked, c.answers, err = s.input.round(ctx, c, u.route, raw); asked != nil {
			s.input.asked(ctx, c, u, relayedMethods(asked))
			return asked, nil
		}
		if err == nil {
			raw, err = s.relay.callUpstream(withAnswers(uctx, c.answers), c.tool.Server, u.route, u.params)
		}
	}
	return s.finish(ctx, c, u, raw, err)
}

// An upstreamCall is a call on its way to its upstream: what finish needs
// to record its result.
type upstreamCall struct {
	req    mcp.CallToolRequest // the client's
	params mcp.CallToolParams  // the upstream's
	route  *upstream.Route
	span   telemetry.Span
	start  time.Time
}

// finish records the upstream's answer to c, raw or err, and returns what
// the client gets.
func (s *Server) finish(ctx context.Context, c *call, u *upstreamCall, raw json.RawMessage, err error) (*mcp.CallToolResult, error) {
	req, route, uspan, start := u.req, u.route, u.span, u.start
	// Whatever came back may carry what the upstream read: the call's
	// labels are armed before the client can see any of it.
	armErr := s.armBy(ctx, c)
	var res *mcp.CallToolResult
	var text string
	var findings scan.Findings
	held := int64(len(raw))
	action := c.resultAction()
	if err == nil {
		err = armErr
	}
	if err == nil {
		err = c.hold.Add(held, "its result")
	}
	if err == nil {
		// Scanned before it is decoded: what is decoded is what the
		// client gets, streamed or not.
		raw, findings = scan.JSON(raw, action == rules.ResultRedact)
		res, text, err = decodeResult(raw)
	}
	elapsed := time.Since(start)
	s.tel.Call(c.tool.Server, elapsed, telemetry.ResultOutcome(res != nil && res.IsError, err))
	uspan.End(spanErr(res, err))
	ev := c.event(audit.KindResult)
	ev.Instance = route.Instance
	ms := elapsed.Milliseconds()
	ev.DurationMS = &ms
	if err != nil {
		s.logger.Warn("upstream call failed", "tool", c.tool.Canonical, "err", err)
		ev.Error = err.Error()
		ev.IsError = ptr(true)
		s.writeAudit(context.WithoutCancel(ctx), ev)
		if cause := context.Cause(ctx); errors.Is(cause, ErrShuttingDown) {
			return mcp.NewToolResultError(fmt.Sprintf("%v (%s; an upstream already working on it was sent notifications/cancelled)", cause, c.tool.Canonical)), nil
		}
		if _, ok := errors.AsType[*upstream.NotSentError](err); ok {
			return mcp.NewToolResultError(fmt.Sprintf("mcpwarden did not forward %s: %s", c.tool.Canonical, scan.ErrText(err, action))), nil
		}
		failed := "the upstream failed"
		switch {
		case errors.Is(err, wire.ErrInflightFull):
			failed = "its result was dropped"
		case errors.Is(err, errLabelsNotKept):
			failed = "its result was withheld"
		case errors.Is(err, errInputRefused):
			return mcp.NewToolResultError(fmt.Sprintf("mcpwarden forwarded %s, but %s", c.tool.Canonical, scan.ErrText(err, action))), nil
		}
		return mcp.NewToolResultError(fmt.Sprintf("mcpwarden forwarded %s, but %s: %s", c.tool.Canonical, failed, scan.ErrText(err, action))), nil
	}
	ev.IsError = ptr(res.IsError)
	ev.ResultBytes = ptr(held)
	ev.ResultPreview = text
	withhold := findings.Found() && action == rules.ResultDeny
	refusal := ""
	if findings.Found() {
		ev.Detail = c.resultDetail(findings, action)
		if action == rules.ResultAsk {
			// Held, in its budget, while a human is asked about it.
			ans := s.askAboutResult(ctx, c, req, findings, text)
			ev.Detail, ev.GrantedBy, ev.Reason, ev.Error = ans.Detail(findings), ans.GrantedBy, ans.Reason, ans.Failure
			ev.Outcome = ans.AuditOutcome()
			switch ans.Outcome {
			case ask.ResultWithheld:
				withhold, refusal = true, ans.Refusal(c.tool.Canonical, findings)
			case ask.ResultRedacted:
				raw, _ = scan.JSON(raw, true)
				if res, text, err = decodeResult(raw); err != nil {
					withhold, refusal = true, findings.Withheld(c.tool.Canonical, action) // cannot be: redacting keeps valid JSON
				}
				ev.ResultPreview = text
			}
		}
		if withhold {
			ev.ResultPreview = ""
		}
	}
	// The result is recorded even when the client has gone away meanwhile.
	s.writeAudit(context.WithoutCancel(ctx), ev)
	if withhold {
		return mcp.NewToolResultError(cmp.Or(refusal, findings.Withheld(c.tool.Canonical, action))), nil
	}
	if len(raw) >= wire.LiftMin && req.Params.Task == nil {
		// A task's result is kept for a later request: not streamed.
		if out := wire.Streamed(ctx, res, c.hold, held); out != nil {
			return out, nil
		}
	}
	return res, nil
}

// writeAudit writes e, logging a failure; the caller decides whether the
// failure stops the call.
func (s *Server) writeAudit(ctx context.Context, e audit.Event) error {
	err := s.audit.Write(ctx, e)
	if err != nil {
		s.tel.AuditWriteFailed()
		s.logger.Error("writing audit event", "event", e.Event, "tool", e.Tool, "err", err)
	}
	return err
}

func (c *call) event(kind audit.Kind) audit.Event {
	e := audit.Event{
		Event:        kind,
		Session:      c.session,
		Client:       c.client,
		Principal:    c.principal,
		Profile:      c.profile,
		Server:       c.tool.Server,
		Method:       string(cmp.Or(c.method, mcp.MethodToolsCall)),
		Tool:         c.tool.Canonical,
		WireName:     c.tool.Wire,
		PolicySHA256: c.policy.SHA256(),
	}
	if kind == audit.KindResult {
		e.DecisionID = c.decision
	}
	return e
}

// decisionEvent returns the call's decision event, with an id of its own
// that the call's result event names.
func (c *call) decisionEvent() audit.Event {
	e := c.event(audit.KindDecision)
	c.decision = audit.NewID(time.Now())
	e.ID = c.decision
	e.Decision = c.verdict.Decision.String()
	e.Shadow = c.shadow
	e.Rule = c.verdict.Rule
	e.ArmedBy = c.verdict.ArmedBy
	e.Arguments = c.args
	e.GrantedBy = c.grantedBy
	e.Outcome = c.outcome
	e.Reason = c.reason
	e.Error = c.failure
	if c.argsErr != nil {
		e.Error = c.argsErr.Error()
	}
	return e
}

// denyText is what the model is told when a rule denies its call: the
// tool, the rule and why, with the decisive value cut from its front. It
// gives no advice to widen the policy; the operator finds that in the log
// and with check.
func denyText(c *call) string {
	if c.verdict.Reason != "" && strings.Contains(c.verdict.Reason, strconv.Quote(c.verdict.Rule)) {
		return fmt.Sprintf("mcpwarden denied %s: %s.", c.tool.Canonical, c.verdict.Reason)
	}
	return fmt.Sprintf("mcpwarden denied %s (%s): %s.", c.tool.Canonical, ruleName(c), c.verdict.Reason)
}

func ptr[T any](v T) *T { return &v }

// spanErr is what the span of a call that returned res and err ends with:
// err, or telemetry.ErrToolResult for a result with isError set.
func spanErr(res *mcp.CallToolResult, err error) error {
	if err == nil && res != nil && res.IsError {
		return telemetry.ErrToolResult
	}
	return err
}
