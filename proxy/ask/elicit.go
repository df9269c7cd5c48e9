package ask

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/proxy/roots"
)

// approvalID keys the approval form in a multi round-trip input request.
const approvalID = "mcpwarden_approval"

// elicit asks a legacy client with elicitation/create and waits for the
// answer, or for a session grant given meanwhile to a concurrent call.
// none is set when the client gave no answer (it cancelled, accepted
// without a valid choice, or the request failed).
func (a *Asker) elicit(ctx context.Context, q *Question, sess *Waiting, key GrantKey, t Target) (res Resolution, none *noAnswer) {
	params, offered := a.Form(q, t)
	w := sess.Wait(key, t)
	defer sess.Unwait(w)
	ectx, cancel := context.WithTimeout(ctx, a.Timeout)
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
		res, err := a.MCP.RequestElicitation(ectx, mcp.ElicitationRequest{
			Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)},
			Params:  params,
		})
		replies <- reply{res, err}
	}()
	select {
	case r := <-replies:
		received = true
		switch {
		case r.err != nil && ctx.Err() != nil:
			return a.cancelled(q, audit.GrantedByUserDenied), nil
		case r.err != nil && errors.Is(ectx.Err(), context.DeadlineExceeded):
			return a.timedOutAt(q, ""), nil
		case r.err != nil:
			return Resolution{}, &noAnswer{why: "asking the client failed", failure: fmt.Sprintf("elicitation: %v", r.err)}
		}
		ans, why := AnswerOf(r.res, offered)
		if ans == state.None {
			return Resolution{}, &noAnswer{why: why}
		}
		return a.apply(ctx, q, sess, key, ScopeFor(t, ans), ans), nil
	case ans := <-w.Done():
		return a.byGrant(q, ans), nil
	}
}

// roundTrip asks a 2026-07-28 client by returning an input request; the
// client retries the call with the answer and the state issued here. A
// retry without a valid choice is no answer: the ask goes on to the next
// resolver within the retried call.
func (a *Asker) roundTrip(ctx context.Context, q *Question, req mcp.CallToolRequest, sess *Waiting, key GrantKey, t Target) (res Resolution, none *noAnswer) {
	digest := q.Digest
	if rs := req.Params.RequestState; rs != "" {
		p, err := a.Keep.Take(ctx, rs) // single use
		if err != nil {
			return a.unavailable(q, err), nil
		}
		if p == nil || p.Session != q.Session || p.Key != key || p.Digest != digest {
			return a.refused(q, audit.GrantedByUserDenied, "answered with a state that does not match a pending ask for this exact call"), nil
		}
		if time.Now().After(p.Expires) {
			return a.timedOutAt(q, ""), nil
		}
		ans, why := AnswerOf(server.ElicitationResponse(req.Params.InputResponses, approvalID), p.Offered)
		if ans == state.None {
			return Resolution{}, &noAnswer{why: why}
		}
		return a.apply(ctx, q, sess, key, ScopeFor(p.Target, ans), ans), nil
	}
	params, offered := a.Form(q, t)
	state, err := a.Keep.Issue(ctx, &Pending{Session: q.Session, Key: key, Digest: digest, Target: t, Offered: offered, Expires: time.Now().Add(a.Timeout)})
	switch {
	case errors.Is(err, ErrTooManyPending):
		return Resolution{}, &noAnswer{why: err.Error()}
	case err != nil:
		return a.unavailable(q, err), nil
	}
	b := server.NewInputRequestBuilder(state).Elicit(approvalID, params)
	if q.RootsByInput {
		b.Roots(roots.InputID) // the retry is decided again, with the roots
	}
	return Resolution{Pending: b.ToolResult()}, nil
}
