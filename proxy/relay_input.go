package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/proxy/ask"
	"github.com/mcpwarden/mcpwarden/proxy/inputrelay"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// A client of protocol 2026-07-28 cannot be sent a request: it is asked
// for input only by the result of its own call (multi round-trip), and
// answers by calling again. An upstream's request made during such a
// client's call is relayed that way (docs/protocol.md, "Requests from
// upstreams"): each is decided as when it goes to a client of the
// handshake, the client gets a multi round-trip result of mcpwarden's with
// the requests it may be sent, under a request state of mcpwarden's that
// binds the answer to the call (package inputrelay), and its retry sends
// the upstream its answers and its own request state back. The retry is
// the call that was decided, not a new one: it goes on under the call's
// decision, provided nothing about the call or the policy changed.

// errInputRefused wraps why what an upstream asked for during a call was
// refused, which ends the call.
var errInputRefused = errors.New("refused what the upstream asked for during it")

// errSamplingByRetry is why a sampling request the rules ask about is
// not put to a 2026-07-28 client: it would be answered by its model
// together with the approval, so only an out-of-band resolver is asked.
var errSamplingByRetry = errors.New("the client answers only by retrying its call, where the sampling request would reach its model before anyone approved it")

// maxInputRounds bounds the multi round-trips of one call.
const maxInputRounds = 10

// requestStateRule names the refusal of a retry whose request state does
// not continue the call it comes with.
const requestStateRule = "builtin:request-state"

// round settles raw, the upstream's multi round-trip result of c,
// a call of a 2026-07-28 client served by route. When some of its
// requests go to the client, res is the result that asks it for them;
// when mcpwarden answered them all itself (roots/list, or none: an
// upstream shedding load), again is what the call is sent again with. A
// request that may not go on ends the call with errInputRefused.
func (r *inputRelay) round(ctx context.Context, c *call, route *upstream.Route, raw json.RawMessage) (res *mcp.CallToolResult, again *upstream.InputAnswers, err error) {
	s := r.srv
	if c.rounds++; c.rounds > maxInputRounds {
		return nil, nil, fmt.Errorf("%w: it asked for input more than %d times", errInputRefused, maxInputRounds)
	}
	round, err := inputrelay.Parse(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errInputRefused, err)
	}
	caps, _ := ask.ClientCapabilities(ctx)
	reach := reachOf(caps)
	server := c.tool.Server
	answered := map[string]json.RawMessage{}
	var relayed []inputrelay.Request
	for _, q := range round.Requests {
		var args map[string]any
		var nobody error
		if err := undeclared(reach, q.Method); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", errInputRefused, err)
		}
		switch q.Method {
		case mcp.MethodListRoots:
			roots, _ := s.relay.ListRoots(ctx, server, mcp.ListRootsRequest{})
			answered[q.ID], _ = json.Marshal(roots)
			continue
		case mcp.MethodElicitationCreate:
			if q.Params, err = inputrelay.WithMessagePrefix(q.Params, elicitationPrefix(server)); err != nil {
				return nil, nil, fmt.Errorf("%w: %w", errInputRefused, err)
			}
			var m struct{ Message string }
			_ = json.Unmarshal(q.Params, &m)
			args = map[string]any{"message": m.Message} // as an elicitation of the handshake is decided
		case mcp.MethodSamplingCreateMessage:
			if err := json.Unmarshal(q.Params, &args); err != nil {
				return nil, nil, fmt.Errorf("%w: reading its sampling request: %w", errInputRefused, err)
			}
			nobody = errSamplingByRetry
		}
		rc := s.newRequest(ctx, server, q.Method, server, args)
		refusal, err := s.settleFromUpstream(ctx, rc, route, nobody)
		switch {
		case err != nil:
			return nil, nil, fmt.Errorf("%w: %w", errInputRefused, err)
		case refusal != "":
			return nil, nil, fmt.Errorf("%w: %s", errInputRefused, refusal)
		}
		relayed = append(relayed, q)
	}
	if len(relayed) == 0 {
		return nil, &upstream.InputAnswers{RequestState: round.RequestState, Responses: answered}, nil
	}
	p := &inputrelay.Pending{
		Session: c.session, Principal: c.principal, Tool: c.tool.Canonical, Digest: argsDigest(c.canonical),
		PolicySHA256: c.policy.SHA256(), Decision: c.decision, Shadow: c.shadow,
		RequestState: round.RequestState, Answered: answered, Rounds: c.rounds,
		Expires: time.Now().Add(s.asker.Timeout),
	}
	for _, q := range relayed {
		p.Relayed = append(p.Relayed, q.ID)
	}
	state, err := s.state.inputs().Issue(ctx, p)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errInputRefused, err)
	}
	if res, err = inputrelay.Result(relayed, state); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errInputRefused, err)
	}
	return res, nil, nil
}

// relayedMethods names the methods of the requests in res, a multi
// round-trip result relayed to the client, for its audit event.
func relayedMethods(res *mcp.CallToolResult) string {
	var methods []string
	for _, q := range res.InputRequests {
		methods = append(methods, string(q.Method))
	}
	return strings.Join(methods, ", ")
}

// continueCall serves a retry that answers what an upstream asked for
// during c (its request state is one round issued): it sends the
// upstream the client's answers, under the decision of the call that
// asked. A retry that is not that call — another session's, principal's,
// tool's or arguments', under another policy, late, or not answering
// every request — is refused and audited, and nothing is forwarded.
func (r *inputRelay) continueCall(ctx context.Context, c *call, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	s := r.srv
	p, err := s.state.inputs().Take(ctx, req.Params.RequestState)
	why := ""
	switch {
	case err != nil:
		why = "its shared state (state.url) cannot be reached to read the request state: " + err.Error()
	case p == nil:
		why = "the request state is not one mcpwarden has pending: it was used, has expired, or was never issued"
	default:
		why = retryMismatch(c, p, s.asker.Timeout)
	}
	var responses map[string]json.RawMessage
	if why == "" {
		if responses, err = inputrelay.Answers(p, req.Params.InputResponses); err != nil {
			why = err.Error()
		}
	}
	if why != "" {
		return r.refuse(ctx, c, why), nil
	}
	c.decision, c.shadow, c.rounds = p.Decision, p.Shadow, p.Rounds
	c.answers = &upstream.InputAnswers{RequestState: p.RequestState, Responses: responses}
	return s.forward(ctx, c, req)
}

// withAnswers returns uctx carrying a, when there are answers to send.
func withAnswers(uctx context.Context, a *upstream.InputAnswers) context.Context {
	if a == nil {
		return uctx
	}
	return upstream.WithInputAnswers(uctx, *a)
}

// An inputRelay relays what upstreams ask for during the calls of
// 2026-07-28 clients to those clients, and serves their retries: by the
// rounds of a 2026-07-28 upstream (round, continueCall), and by holding
// the call of an upstream of the handshake (hold, continueHeld).
type inputRelay struct {
	srv  *Server
	held heldCalls
	// abandoning are the goroutines recording the results of held calls
	// no retry goes on with.
	abandoning sync.WaitGroup
}

// continueRetry serves a retry of c whose request state is one the
// relay issued.
func (r *inputRelay) continueRetry(ctx context.Context, c *call, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if isHeldState(req.Params.RequestState) {
		return r.continueHeld(ctx, c, req)
	}
	return r.continueCall(ctx, c, req)
}

// asked records that the upstream asked, during c, for what the client
// is sent (methods) by the result of its call.
func (r *inputRelay) asked(ctx context.Context, c *call, u *upstreamCall, methods string) {
	u.span.End(nil)
	ev := c.event(audit.KindResult)
	ev.Instance = u.route.Instance
	ev.Detail = "the upstream asked for input (" + methods + "): relayed to the client, whose retry goes on with the call"
	r.srv.writeAudit(context.WithoutCancel(ctx), ev)
}
