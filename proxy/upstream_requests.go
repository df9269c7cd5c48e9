package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// Requests from upstreams to the client side (docs/design.md, "Sessions and principals").
// Sampling and elicitation are decided as mcp:<server>:sampling/createMessage
// and mcp:<server>:elicitation/create for the session they go to, audited,
// and sent only to a session of the principal whose request to that
// server is in flight — or, outside any request, to the newest session
// whose profile can see the server, provided every such session has one
// principal. roots/list is answered by mcpwarden itself.

// Why an upstream's request has no client session to go to.
var (
	errNoCaller        = errors.New("mcpwarden: no client session that can see this server is connected, so there is no client to ask")
	errAmbiguousCaller = errors.New("mcpwarden: client sessions of more than one principal could be meant, so the request goes to none of them")
)

// elicitationPrefix is what an upstream's elicitation message starts with:
// the server's name in brackets, so that the human sees who asks and no
// upstream can pass its form off as mcpwarden's own.
func elicitationPrefix(server string) string { return "[" + server + "] " }

// recipient finds the client session an upstream's request or notification
// of method belongs to: the newest request in flight to server, if every
// request in flight to it comes from one principal; else, with none in
// flight, the newest session whose profile can see the server, if every
// such session is one principal's. It never picks a session of another
// principal than the one it cannot tell apart from: with
// errAmbiguousCaller it returns that newest one's context only for a
// caller that decides by it without sending it anything (a connection,
// which asks no one then). From an isolated child (from is not nil) only
// the requests and sessions that child serves count: another caller's, in
// flight to another child of the server, never do.
func (s *relay) recipient(from *upstream.Route, server string, method mcp.MCPMethod) (context.Context, error) {
	s.mu.Lock()
	calls := slices.DeleteFunc(slices.Clone(s.active[server]), func(c *inflight) bool { return !from.Serves(c.principal, c.session) })
	s.mu.Unlock()
	if len(calls) > 0 {
		newest := calls[len(calls)-1]
		for _, c := range calls {
			if c.principal != newest.principal {
				return newest.ctx, errAmbiguousCaller
			}
		}
		return newest.ctx, nil
	}
	policy := s.current().policy
	var best *knownSession
	ambiguous := false
	for _, k := range s.sessions.all() {
		if !from.Serves(k.principal, k.id) || policy.Hidden(rules.Call{Profile: k.profile, Server: server, Tool: string(method)}) {
			continue
		}
		ambiguous = ambiguous || best != nil && best.principal != k.principal
		if best == nil || k.seq > best.seq {
			best = &k
		}
	}
	switch {
	case best == nil:
		return nil, errNoCaller
	case ambiguous:
		return best.ctx, errAmbiguousCaller
	}
	return best.ctx, nil
}

// fromUpstream decides an upstream's request of method to the client
// session in ctx, with args its params as the rules and the human see
// them (settleFromUpstream), and when it may go on runs do and writes the
// result event, which names the isolated child that asked, from (nil for
// a shared server), in instance.
func (s *relay) fromUpstream(ctx context.Context, from *upstream.Route, server string, method mcp.MCPMethod, args map[string]any, do func(context.Context) (any, error)) (any, error) {
	c := s.newRequest(ctx, server, method, server, args)
	var nobody error
	if method == mcp.MethodSamplingCreateMessage && heldOf(ctx) != nil {
		nobody = errSamplingByRetry
	}
	if refusal, err := s.settleFromUpstream(ctx, c, from, nobody); err != nil {
		return nil, err
	} else if refusal != "" {
		return nil, errors.New(refusal)
	}
	start := time.Now()
	res, err := do(ctx)
	ev := c.event(audit.KindResult)
	ev.Instance = instanceOf(from)
	ms := time.Since(start).Milliseconds()
	ev.DurationMS = &ms
	ev.IsError = ptr(err != nil)
	if err != nil {
		ev.Error = err.Error()
	}
	s.writeAudit(context.WithoutCancel(ctx), ev)
	return res, err
}

// settleFromUpstream decides c, an upstream's request (c.method) to the
// client session in ctx, and writes its decision event, which names the
// isolated child that asked, from (nil for a shared server), in instance.
// refusal is what the upstream is told when the request may not go on, ""
// when it may; err is set when the audit log cannot be written and must
// be. An elicitation the rules ask about goes on: it is itself a form the
// human answers, marked as the server's. Any other request the rules ask
// about is asked by mcpwarden first, like any request: a client may show
// its own sampling prompt to no one (or let the model's host approve it),
// so the ask is not left to it. servers.<name>.policy.sampling: deny
// denies sampling whatever the rules say. nobody, when set, says why the
// client session in ctx, if any, may not be asked (a connection no session,
// or no one principal's, could be attributed to): an ask then goes to the
// out-of-band resolvers only, and with none configured it is refused,
// saying so, whatever ask_fallback.
func (s *Server) settleFromUpstream(ctx context.Context, c *call, from *upstream.Route, nobody error) (refusal string, err error) {
	c.verdict = s.decideFromUpstream(ctx, c, c.tool.Server, c.method)
	c.grantedBy = audit.GrantedByRule
	if c.argsErr != nil {
		c.verdict = rules.Verdict{Decision: rules.Deny, Reason: c.argsErr.Error()}
	}
	switch {
	case c.shadowed(s.tel):
	case c.verdict.Decision == rules.Deny:
		refusal = denyText(c)
	case c.verdict.Decision == rules.Ask && c.method == mcp.MethodElicitationCreate:
		c.reason = "let through: the elicitation itself goes to the human"
		c.outcome = audit.OutcomeAllowed
	case c.verdict.Decision == rules.Ask && nobody != nil && len(s.asker.Resolvers) == 0:
		c.grantedBy, c.reason, c.outcome = audit.GrantedByNoElicitation, nobody.Error(), audit.OutcomeRefused
		refusal = fmt.Sprintf("mcpwarden: %s needs approval (%s), and %v; not forwarded.", c.tool.Canonical, ruleName(c), nobody)
	case c.verdict.Decision == rules.Ask:
		c.notAsked = nobody
		res := s.resolveAsk(ctx, c, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: c.tool.Wire, Arguments: c.args}})
		if res.Pending != nil {
			res = retryOnly(c)
		}
		c.grantedBy, c.reason, c.failure = res.GrantedBy, res.Reason, res.Failure
		c.outcome = audit.OutcomeOf(res.Forward)
		if !res.Forward {
			refusal = res.Text
		}
	}
	s.tel.Decision(c.profile, c.tool.Server, string(c.method), c.verdict.Decision)
	decision := c.decisionEvent()
	decision.Instance = instanceOf(from)
	if err := s.writeAudit(ctx, decision); err != nil && s.audit.Required() {
		return "", fmt.Errorf("mcpwarden: the audit log cannot be written, so %s is refused: %w", c.tool.Canonical, err)
	}
	return refusal, nil
}

// instanceOf names the isolated child a Route came from in audit events:
// "" for a shared server (nil).
func instanceOf(from *upstream.Route) string {
	if from == nil {
		return ""
	}
	return from.Instance
}

// paramsOf is a request's params as the rules and the human see them: the
// JSON object that is forwarded, decoded.
func paramsOf(params any) (map[string]any, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("mcpwarden: the request's params cannot be encoded: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("mcpwarden: the request's params are not an object: %w", err)
	}
	return m, nil
}

// refuseFromUpstream audits an upstream's request that has no session to
// go to and returns why.
func (s *relay) refuseFromUpstream(server string, method mcp.MCPMethod, why error) error {
	c := s.newRequest(context.Background(), server, method, server, nil)
	c.verdict = rules.Verdict{Decision: rules.Deny, Reason: why.Error()}
	c.grantedBy = audit.GrantedByRule
	c.reason = why.Error()
	s.writeAudit(context.Background(), c.decisionEvent())
	return why
}

// CreateMessage passes an upstream's sampling request to its client
// session (see target), unless it is denied.
func (s *relay) CreateMessage(ctx context.Context, server string, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	method := mcp.MethodSamplingCreateMessage
	from := upstream.CallerOf(ctx)
	ctx, err := s.recipient(from, server, method)
	if err != nil {
		return nil, s.refuseFromUpstream(server, method, err)
	}
	params, err := paramsOf(req.CreateMessageParams)
	if err != nil {
		return nil, s.refuseFromUpstream(server, method, err)
	}
	res, err := s.fromUpstream(ctx, from, server, method, params, func(ctx context.Context) (any, error) {
		if h := heldOf(ctx); h != nil {
			return heldAnswer[mcp.CreateMessageResult](h.ask(ctx, method, req.CreateMessageParams))
		}
		return s.mcp.RequestSampling(ctx, req)
	})
	if err != nil {
		return nil, err
	}
	return res.(*mcp.CreateMessageResult), nil
}

// Elicit passes an upstream's elicitation to its client session (see
// target), unless it is denied, with the message prefixed by the server's
// name.
func (s *relay) Elicit(ctx context.Context, server string, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	method := mcp.MethodElicitationCreate
	from := upstream.CallerOf(ctx)
	ctx, err := s.recipient(from, server, method)
	if err != nil {
		return nil, s.refuseFromUpstream(server, method, err)
	}
	req.Params.Message = elicitationPrefix(server) + req.Params.Message
	res, err := s.fromUpstream(ctx, from, server, method, map[string]any{"message": req.Params.Message}, func(ctx context.Context) (any, error) {
		if h := heldOf(ctx); h != nil {
			return heldAnswer[mcp.ElicitationResult](h.ask(ctx, method, req.Params))
		}
		return s.mcp.RequestElicitation(ctx, req)
	})
	if err != nil {
		return nil, err
	}
	return res.(*mcp.ElicitationResult), nil
}

// ListRoots answers an upstream's roots/list itself, without asking a
// client: the server's workspace (policy.workspace of the global and the
// server's policy). A client's own roots are not passed on: they belong to
// one caller, and the server is shared. With no workspace set the answer
// is an empty list, not the server's root or mcpwarden's working
// directory: servers such as server-filesystem replace the directories
// they were started with by the roots they are given, and an empty list
// leaves them as configured, where any directory would widen them.
func (s *relay) ListRoots(_ context.Context, server string, _ mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	dirs, _ := s.current().policy.Workspace(server)
	roots := make([]mcp.Root, 0, len(dirs))
	for _, d := range dirs {
		roots = append(roots, mcp.Root{URI: fileURI(d), Name: filepath.Base(d)})
	}
	return &mcp.ListRootsResult{Roots: roots}, nil
}

// fileURI is the file:// URI of an absolute directory.
func fileURI(dir string) string {
	p := filepath.ToSlash(dir)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive: file:///C:/x
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}

// decideFromUpstream is the verdict of an upstream's request of method:
// the rules', unless the server's policy denies sampling, all read from
// the call's one snapshot.
func (s *Server) decideFromUpstream(ctx context.Context, c *call, server string, method mcp.MCPMethod) rules.Verdict {
	if method == mcp.MethodSamplingCreateMessage && c.snap.servers[server].Sampling == rules.SamplingDeny {
		return rules.Verdict{Decision: rules.Deny, Rule: "servers." + server + ".policy.sampling: deny", Gate: "servers." + server + ".policy", Reason: "the server's policy denies sampling"}
	}
	return s.decide(ctx, c)
}
