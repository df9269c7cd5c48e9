package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/telemetry"
	"github.com/mcpwarden/mcpwarden/proxy/ask"
	"github.com/mcpwarden/mcpwarden/proxy/scan"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// This file is the one place where the proxy touches an upstream's
// session (tools/call goes through callUpstream in relay.go). Two ways
// lead there, and a test holds every other file to them:
//   - forwardRequest, for a client's request, reached only from request
//     (request.go) once the request was decided, allowed and its decision
//     audited;
//   - ownSession, for what mcpwarden asks of an upstream itself, with no
//     client's data in it: listing its catalog.

// forwardRequest runs do against the upstream session of an allowed
// request and writes the request's result event.
func (s *Server) forwardRequest(ctx context.Context, c *call, do func(context.Context, *client.Client, mcp.ServerCapabilities) (any, error)) (any, error) {
	defer s.relay.enter(ctx, c.tool.Server)()
	uctx, uspan := s.tel.StartUpstreamCall(ctx, c.tool.Server, c.tool.Name)
	route := &upstream.Route{Principal: c.principal, Session: c.session} // an isolated server picks its caller's child
	caps, modern := ask.ClientCapabilities(ctx)
	uctx = withCallerReach(uctx, caps, modern)
	start := time.Now()
	res, err := s.withSession(uctx, c.tool.Server, route, do)
	if armErr := s.armBy(ctx, c); err == nil && armErr != nil { // before the client can see the result
		res, err = nil, armErr
	}
	elapsed := time.Since(start)
	s.tel.Call(c.tool.Server, elapsed, telemetry.ResultOutcome(false, err))
	uspan.End(err)
	ev := c.event(audit.KindResult)
	ev.Instance = route.Instance
	ms := elapsed.Milliseconds()
	ev.DurationMS = &ms
	ev.IsError = ptr(err != nil)
	if err != nil {
		s.logger.Warn("upstream request failed", "request", c.tool.Canonical, "err", err)
		ev.Error = err.Error()
	} else if raw, merr := json.Marshal(res); merr == nil {
		ev.ResultBytes = ptr(int64(len(raw)))
	}
	action := c.resultAction()
	var findings scan.Findings
	refusal := ""
	if err == nil {
		var serr error
		if res, findings, serr = scan.Reply(res, action == rules.ResultRedact); serr != nil {
			// What cannot be scanned or redacted is withheld: doubt fails closed.
			ev.Error = serr.Error()
			refusal = fmt.Sprintf("mcpwarden withheld the result of %s: it could not be scanned for credentials", c.tool.Canonical)
		}
	}
	if findings.Found() {
		ev.Detail = c.resultDetail(findings, action)
		if action == rules.ResultAsk {
			// Held while a human is asked about it.
			ans := s.askAboutResult(ctx, c, mcp.CallToolRequest{}, findings, ask.ReplyText(res))
			ev.Detail, ev.GrantedBy, ev.Reason = ans.Detail(findings), ans.GrantedBy, ans.Reason
			ev.Outcome = ans.AuditOutcome()
			if ans.Failure != "" {
				ev.Error = ans.Failure
			}
			switch ans.Outcome {
			case ask.ResultWithheld:
				refusal = ans.Refusal(c.tool.Canonical, findings)
			case ask.ResultRedacted:
				var serr error
				if res, _, serr = scan.Reply(res, true); serr != nil {
					ev.Error = serr.Error()
					refusal = fmt.Sprintf("mcpwarden withheld the result of %s: it could not be redacted", c.tool.Canonical)
				}
			}
		}
	}
	// The result is recorded even when the client has gone away meanwhile.
	s.writeAudit(context.WithoutCancel(ctx), ev)
	if err != nil {
		if _, ok := errors.AsType[*upstream.NotSentError](err); ok {
			return nil, fmt.Errorf("mcpwarden did not forward %s: %s", c.tool.Canonical, scan.ErrText(err, action))
		}
		if text := scan.ErrText(err, action); text != err.Error() {
			return nil, fmt.Errorf("mcpwarden forwarded %s, but the upstream failed: %s", c.tool.Canonical, text)
		}
		if errors.Is(err, errLabelsNotKept) {
			return nil, fmt.Errorf("%w: mcpwarden forwarded %s, but withheld its result: %w", errRefused, c.tool.Canonical, err)
		}
		return nil, fmt.Errorf("mcpwarden forwarded %s, but the upstream failed: %w", c.tool.Canonical, err)
	}
	switch {
	case refusal != "":
		return nil, fmt.Errorf("%w: %s", errRefused, refusal)
	case findings.Found() && action == rules.ResultDeny:
		return nil, fmt.Errorf("%w: %s", errRefused, findings.Withheld(c.tool.Canonical, action))
	}
	return res, nil
}

// withSession runs do with the session that serves the caller route on
// server: its own child, when the server is isolated (route.Instance then
// names it).
func (s *Server) withSession(ctx context.Context, server string, route *upstream.Route, do func(context.Context, *client.Client, mcp.ServerCapabilities) (any, error)) (any, error) {
	return s.upstream.Request(ctx, server, route, do)
}

// ownRequest runs do with the upstream session route picks, for a
// request of mcpwarden's own on a client session's behalf that no client
// request asked for, so none is decided: the unsubscribe of a client
// session that ended (subscribers.go).
func (cat *catalog) ownRequest(ctx context.Context, server string, route *upstream.Route, do func(context.Context, *client.Client, mcp.ServerCapabilities) (any, error)) (any, error) {
	return cat.upstream.Request(ctx, server, route, do)
}

// ownSession is an upstream's session for mcpwarden's own requests, which
// carry nothing a client sent: listing the catalog.
func (cat *catalog) ownSession(server string) (*client.Client, mcp.ServerCapabilities, error) {
	return cat.upstream.Session(server)
}
