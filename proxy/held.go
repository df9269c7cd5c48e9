package proxy

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/proxy/ask"
	"github.com/mcpwarden/mcpwarden/proxy/inputrelay"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// An upstream of the handshake asks for input during a call with a
// request of its own (elicitation/create, sampling/createMessage) and
// waits for the answer while the call runs. A client of 2026-07-28 can be
// asked only by the result of its call, so its call to such an upstream
// runs on a goroutine of its own (a heldCall): when the upstream asks, the
// client's call returns a multi round-trip result carrying the request,
// and the upstream's call is held, still running, until the client's
// retry brings the answer, or ask.timeout passes and the call is
// cancelled. Held calls live in the process that holds them: the retry
// must reach this replica (docs/protocol.md).

// heldStatePrefix starts the request state of a held call's ask, telling
// it from the states of mcpwarden's own asks and of relayed rounds.
const heldStatePrefix = "held."

// isHeldState reports whether a retry's request state names a held call.
func isHeldState(s string) bool { return strings.HasPrefix(s, heldStatePrefix) }

// errNoRetry is what an upstream is told when the client did not retry
// its call with the answer within ask.timeout.
var errNoRetry = errors.New("mcpwarden: the client did not answer within ask.timeout; the call is cancelled")

// A heldCall is the call of a 2026-07-28 client to an upstream of the
// handshake, running upstream on a goroutine of its own.
type heldCall struct {
	relay  *inputRelay
	c      *call
	u      *upstreamCall
	reach  upstream.Reach // what the client declared
	asks   chan *heldAsk  // the upstream's requests, handed to the client one at a time
	done   chan struct{}  // closed when result is set: the upstream answered
	result heldResult
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	rounds  int  // asks so far
	claimed bool // the result was taken, to be recorded once
}

// A heldAsk is one of the upstream's requests, as the client is sent it,
// and the client's answer (nil: none).
type heldAsk struct {
	id     string
	method mcp.MCPMethod
	params json.RawMessage
	answer chan json.RawMessage
}

type heldResult struct {
	raw json.RawMessage
	err error
}

type heldKey struct{}

// heldOf is the held call a request to the upstream is made for, or nil.
func heldOf(ctx context.Context) *heldCall {
	h, _ := ctx.Value(heldKey{}).(*heldCall)
	return h
}

// heldCalls are the calls held for their client's retry, by the request
// state its ask was sent with, bounded like the asks waiting for a retry.
type heldCalls struct {
	mu      sync.Mutex
	waiting map[string]heldWait
}

// A heldWait is an ask sent to the client, and what its retry must match.
type heldWait struct {
	h    *heldCall
	ask  *heldAsk
	bind inputrelay.Pending
}

// hold sends c upstream on a goroutine of its own and serves the
// client's call until the upstream answers or asks for input.
func (r *inputRelay) hold(ctx, uctx context.Context, c *call, u *upstreamCall) (*mcp.CallToolResult, error) {
	s := r.srv
	hctx, cancel := context.WithCancelCause(context.WithoutCancel(uctx))
	caps, _ := ask.ClientCapabilities(ctx)
	h := &heldCall{relay: r, c: c, u: u, reach: reachOf(caps), asks: make(chan *heldAsk), done: make(chan struct{}), cancel: cancel}
	go func() {
		raw, err := s.relay.callUpstream(context.WithValue(hctx, heldKey{}, h), c.tool.Server, u.route, u.params)
		h.result = heldResult{raw, err}
		close(h.done)
	}()
	return r.await(ctx, h)
}

// await serves the client's call (the first, or a retry) of h until
// the upstream answers, asks the client for input, or the client goes.
func (r *inputRelay) await(ctx context.Context, h *heldCall) (*mcp.CallToolResult, error) {
	s := r.srv
	for {
		select {
		case <-h.done:
			return h.finish(ctx)
		case a := <-h.asks:
			state, err := r.held.park(h, a, time.Now().Add(s.asker.Timeout))
			var res *mcp.CallToolResult
			if err == nil {
				if res, err = inputrelay.Result([]inputrelay.Request{{ID: a.id, Method: a.method, Params: a.params}}, state); err != nil {
					r.held.take(state)
				}
			}
			if err != nil {
				s.logger.Warn("an upstream's request cannot be relayed to the client", "tool", h.c.tool.Canonical, "err", err)
				a.answer <- nil
				continue
			}
			r.asked(ctx, h.c, h.u, string(a.method))
			return res, nil
		case <-ctx.Done():
			h.cancel(context.Cause(ctx)) // the client went, or shutdown cancelled it: the upstream's call ends for the same cause
			<-h.done
			return h.finish(ctx)
		}
	}
}

// finish records h's result and returns what the client gets, unless it
// was recorded already (abandon).
func (h *heldCall) finish(ctx context.Context) (*mcp.CallToolResult, error) {
	h.cancel(nil)
	if !h.claim() {
		return mcp.NewToolResultError(fmt.Sprintf("mcpwarden forwarded %s, but %v", h.c.tool.Canonical, errNoRetry)), nil
	}
	return h.relay.srv.finish(ctx, h.c, h.u, h.result.raw, h.result.err)
}

// park keeps a, an ask of h sent to the client, until its retry takes it
// or expires passes, under a new request state.
func (hc *heldCalls) park(h *heldCall, a *heldAsk, expires time.Time) (string, error) {
	c := h.c
	state := heldStatePrefix + rand.Text()
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if len(hc.waiting) >= maxPendingAsks {
		return "", inputrelay.ErrTooMany
	}
	if hc.waiting == nil {
		hc.waiting = map[string]heldWait{}
	}
	hc.waiting[state] = heldWait{h: h, ask: a, bind: inputrelay.Pending{
		Session: c.session, Principal: c.principal, Tool: c.tool.Canonical, Digest: argsDigest(c.canonical),
		PolicySHA256: c.policy.SHA256(), Relayed: []string{a.id}, Expires: expires,
	}}
	return state, nil
}

// take returns the ask waiting under state and forgets it; ok is false
// when none is. Whoever takes an ask sends its answer (nil for none).
func (hc *heldCalls) take(state string) (heldWait, bool) {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	w, ok := hc.waiting[state]
	delete(hc.waiting, state)
	return w, ok
}

// ask hands the client a request of the upstream's, params as it is to
// be sent, and waits for the answer the client's retry brings: at most
// ask.timeout from now, after which the call is cancelled.
func (h *heldCall) ask(ctx context.Context, method mcp.MCPMethod, params any) (json.RawMessage, error) {
	if err := undeclared(h.reach, method); err != nil {
		return nil, fmt.Errorf("mcpwarden: %w", err)
	}
	h.mu.Lock()
	h.rounds++
	n := h.rounds
	h.mu.Unlock()
	if n > maxInputRounds {
		return nil, fmt.Errorf("mcpwarden: the upstream asked for input more than %d times during one call", maxInputRounds)
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	a := &heldAsk{id: strconv.Itoa(n), method: method, params: raw, answer: make(chan json.RawMessage, 1)}
	timer := time.NewTimer(h.relay.srv.asker.Timeout)
	defer timer.Stop()
	select {
	case h.asks <- a:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-timer.C:
		h.abandon(errNoRetry)
		return nil, errNoRetry
	}
	select {
	case ans := <-a.answer:
		return answered(ans)
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-timer.C:
	}
	if _, ok := h.relay.held.takeAsk(a); ok {
		h.abandon(errNoRetry)
		return nil, errNoRetry
	}
	return answered(<-a.answer) // a retry took it: its answer is on its way
}

// answered is what the upstream gets for a client's answer ans.
func answered(ans json.RawMessage) (json.RawMessage, error) {
	if ans == nil {
		return nil, errors.New("mcpwarden: the client's retry brought no answer")
	}
	return ans, nil
}

// takeAsk forgets a, wherever it waits, and reports whether it was there.
func (hc *heldCalls) takeAsk(a *heldAsk) (heldWait, bool) {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	for state, w := range hc.waiting {
		if w.ask == a {
			delete(hc.waiting, state)
			return w, true
		}
	}
	return heldWait{}, false
}

// abandon cancels h, which no retry will go on with, for cause: the
// upstream is told to stop, and its answer, when it comes, is recorded as
// the call's result with cause, unless a retry took it meanwhile.
func (h *heldCall) abandon(cause error) {
	h.cancel(cause)
	h.relay.abandoning.Go(func() {
		<-h.done
		if h.claim() {
			h.relay.abandoned(h, cause)
		}
	})
}

// errHeldAtShutdown is why a held call waiting for its client's retry
// ends when mcpwarden shuts down.
var errHeldAtShutdown = fmt.Errorf("%w: the call was waiting for the client's answer", ErrShuttingDown)

// drain ends the held calls waiting for their client's retry: shutting
// down, mcpwarden takes no retry. Each upstream's request is answered
// with none, and the call is cancelled, its result recorded.
func (r *inputRelay) drain() {
	for _, w := range r.held.takeAll() {
		w.ask.answer <- nil
		w.h.abandon(errHeldAtShutdown)
	}
}

// takeAll takes every ask waiting for a retry.
func (hc *heldCalls) takeAll() []heldWait {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	all := make([]heldWait, 0, len(hc.waiting))
	for _, w := range hc.waiting {
		all = append(all, w)
	}
	hc.waiting = nil
	return all
}

// claim reports whether the caller is the first to take h's result, which
// is recorded once.
func (h *heldCall) claim() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	first := !h.claimed
	h.claimed = true
	return first
}

// continueHeld serves a retry of c that answers an ask of a held call (its
// request state is one park issued), and then the held call, as await
// does. A retry that is not that call is refused as continueCall
// refuses it, and the held call is cancelled: its state was single use.
func (r *inputRelay) continueHeld(ctx context.Context, c *call, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	s := r.srv
	w, ok := r.held.take(req.Params.RequestState)
	why := ""
	switch {
	case !ok:
		why = "the request state is not one mcpwarden has pending here: it was used, has expired, was never issued, or the call is held by another replica"
	default:
		why = retryMismatch(c, &w.bind, s.asker.Timeout)
	}
	var ans json.RawMessage
	if why == "" {
		answers, err := inputrelay.Answers(&w.bind, req.Params.InputResponses)
		if err != nil {
			why = err.Error()
		}
		ans = answers[w.ask.id]
	}
	if ok {
		w.ask.answer <- ans // nil, when refused: the upstream is told there is none
	}
	if why != "" {
		if ok {
			w.h.abandon(errNoRetry)
		}
		return r.refuse(ctx, c, why), nil
	}
	w.h.c.hold = c.hold // the first call's hold went with it; its result is held in this one's
	return r.await(ctx, w.h)
}

// retryMismatch is why a retry of c cannot answer the ask bound by p,
// "" when it can: it must be the same session's and principal's call of
// the same tool with the same arguments, under the same policy, in time.
func retryMismatch(c *call, p *inputrelay.Pending, timeout time.Duration) string {
	switch {
	case c.argsErr != nil || p.Session != c.session || p.Principal != c.principal || p.Tool != c.tool.Canonical || p.Digest != argsDigest(c.canonical):
		return "the request state was issued for another call; retry with the exact arguments of the call that was asked"
	case p.PolicySHA256 != c.policy.SHA256():
		return "the policy changed since the call was decided; call it again"
	case time.Now().After(p.Expires):
		return fmt.Sprintf("the answer came after ask.timeout (%s)", timeout)
	}
	return ""
}

// refuse audits the refusal of a retry of c that does not go on with
// the call it names (why), and returns what the client is told.
func (r *inputRelay) refuse(ctx context.Context, c *call, why string) *mcp.CallToolResult {
	s := r.srv
	c.verdict = rules.Verdict{Decision: rules.Deny, Rule: requestStateRule, Reason: why}
	c.grantedBy, c.reason = audit.GrantedByRule, why
	if err := s.writeAudit(ctx, c.decisionEvent()); err != nil && s.audit.Required() {
		why += "; and the audit log cannot be written"
	}
	c.logRefusal(s.logger)
	return mcp.NewToolResultError(fmt.Sprintf("mcpwarden refused %s: %s; nothing was forwarded.", c.tool.Canonical, why))
}

// abandoned records the result of a held call that no retry came for.
func (r *inputRelay) abandoned(h *heldCall, err error) {
	ev := h.c.event(audit.KindResult)
	ev.Instance = h.u.route.Instance
	ev.Error = err.Error()
	ev.IsError = ptr(true)
	r.srv.writeAudit(context.Background(), ev)
}

// heldAnswer decodes the client's answer to a held call's ask.
func heldAnswer[T any](raw json.RawMessage, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("mcpwarden: the client's answer cannot be read: %w", err)
	}
	return &v, nil
}
