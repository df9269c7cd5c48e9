package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/telemetry"
	"github.com/mcpwarden/mcpwarden/rules"
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
	defer s.enter(ctx, c.tool.Server)()
	uctx, uspan := s.tel.StartUpstreamCall(ctx, c.tool.Server, c.tool.Name)
	start := time.Now()
	res, err := s.withSession(uctx, c.tool.Server, do)
	if aerr := s.armBy(ctx, c); aerr != nil && err == nil { // before the client can see the result
		res, err = nil, aerr
	}
	elapsed := time.Since(start)
	s.tel.Call(c.tool.Server, elapsed, telemetry.ResultOutcome(false, err))
	uspan.End(err)
	ev := c.event(audit.KindResult)
	ms := elapsed.Milliseconds()
	ev.DurationMS = &ms
	ev.IsError = ptr(err != nil)
	if err != nil {
		s.logger.Warn("upstream request failed", "request", c.tool.Canonical, "err", err)
		ev.Error = err.Error()
	} else if raw, merr := json.Marshal(res); merr == nil {
		ev.ResultBytes = ptr(int64(len(raw)))
	}
	action := c.policy.Results(c.tool.Server)
	var scan resultScan
	if r, ok := res.(*mcp.ReadResourceResult); ok && err == nil {
		scan = scanResource(r, action == rules.ResultRedact)
	}
	if scan.found() {
		ev.Detail = scan.detail(action)
	}
	// The result is recorded even when the client has gone away meanwhile.
	s.writeAudit(context.WithoutCancel(ctx), ev)
	if err != nil {
		if text := errText(err, action); text != err.Error() {
			return nil, fmt.Errorf("mcpwarden forwarded %s, but the upstream failed: %s", c.tool.Canonical, text)
		}
		return nil, fmt.Errorf("mcpwarden forwarded %s, but the upstream failed: %w", c.tool.Canonical, err)
	}
	if scan.found() && (action == rules.ResultDeny || action == rules.ResultAsk) {
		return nil, fmt.Errorf("%w: %s", errRefused, scan.withheld(c.tool.Canonical, action))
	}
	return res, nil
}

func (s *Server) withSession(ctx context.Context, server string, do func(context.Context, *client.Client, mcp.ServerCapabilities) (any, error)) (any, error) {
	cl, caps, err := s.upstream.Session(server)
	if err != nil {
		return nil, err
	}
	return do(ctx, cl, caps)
}

// ownSession is an upstream's session for mcpwarden's own requests, which
// carry nothing a client sent: listing the catalog.
func (s *Server) ownSession(server string) (*client.Client, mcp.ServerCapabilities, error) {
	return s.upstream.Session(server)
}
