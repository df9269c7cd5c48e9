package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/proxy/ask"
)

// approvalID keys the approval form in a multi round-trip input request.
const approvalID = "mcpwarden_approval"

// elicit asks a legacy client with elicitation/create and waits for the
// answer, or for a session grant given meanwhile to a concurrent call.
// none is set when the client gave no answer (it cancelled, accepted
// without a valid choice, or the request failed).
func (a *asker) elicit(ctx context.Context, c *call, sess *ask.Waiting, key ask.GrantKey, t ask.Target) (res resolution, none *noAnswer) {
	params, offered := a.form(c, t)
	w := sess.Wait(key, t)
	defer sess.Unwait(w)
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
	select {
	case r := <-replies:
		received = true
		switch {
		case r.err != nil && ctx.Err() != nil:
			return a.cancelled(c, audit.GrantedByUserDenied), nil
		case r.err != nil && errors.Is(ectx.Err(), context.DeadlineExceeded):
			return a.timedOutAt(c, ""), nil
		case r.err != nil:
			return resolution{}, &noAnswer{why: "asking the client failed", failure: fmt.Sprintf("elicitation: %v", r.err)}
		}
		ans, why := ask.AnswerOf(r.res, offered)
		if ans == ask.None {
			return resolution{}, &noAnswer{why: why}
		}
		return a.apply(ctx, c, sess, key, ask.ScopeFor(t, ans), ans), nil
	case ans := <-w.Done():
		return a.byGrant(c, ans), nil
	}
}

// roundTrip asks a 2026-07-28 client by returning an input request; the
// client retries the call with the answer and the state issued here. A
// retry without a valid choice is no answer: the ask goes on to the next
// resolver within the retried call.
func (a *asker) roundTrip(ctx context.Context, c *call, req mcp.CallToolRequest, sess *ask.Waiting, key ask.GrantKey, t ask.Target) (res resolution, none *noAnswer) {
	digest := argsDigest(c.canonical)
	if rs := req.Params.RequestState; rs != "" {
		p, err := a.keep.Take(ctx, rs) // single use
		if err != nil {
			return a.unavailable(c, err), nil
		}
		if p == nil || p.Session != c.session || p.Key != key || p.Digest != digest {
			return a.refused(c, audit.GrantedByUserDenied, "answered with a state that does not match a pending ask for this exact call"), nil
		}
		if time.Now().After(p.Expires) {
			return a.timedOutAt(c, ""), nil
		}
		ans, why := ask.AnswerOf(server.ElicitationResponse(req.Params.InputResponses, approvalID), p.Offered)
		if ans == ask.None {
			return resolution{}, &noAnswer{why: why}
		}
		return a.apply(ctx, c, sess, key, ask.ScopeFor(p.Target, ans), ans), nil
	}
	params, offered := a.form(c, t)
	state, err := a.keep.Issue(ctx, &ask.Pending{Session: c.session, Key: key, Digest: digest, Target: t, Offered: offered, Expires: time.Now().Add(a.timeout)})
	switch {
	case errors.Is(err, ask.ErrTooManyPending):
		return resolution{}, &noAnswer{why: err.Error()}
	case err != nil:
		return a.unavailable(c, err), nil
	}
	b := server.NewInputRequestBuilder(state).Elicit(approvalID, params)
	if c.rootsByInput {
		b.Roots(rootsInputID) // the retry is decided again, with the roots
	}
	return resolution{pending: b.ToolResult()}, nil
}

func argsDigest(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}
