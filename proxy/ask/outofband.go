package ask

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/approvals"
	"github.com/mcpwarden/mcpwarden/internal/argview"
	"github.com/mcpwarden/mcpwarden/internal/state"
)

// progressEvery is how often a call waiting for an out-of-band answer
// tells the client where to answer, when it asked for progress.
const progressEvery = 5 * time.Second

// outOfBand holds the ask while resolver r decides it, telling a client
// that asked for progress where to answer. A session grant given
// meanwhile (to a concurrent call) settles it too. none is set when r gave
// no answer (it failed).
func (a *Asker) outOfBand(ctx context.Context, q *Question, req mcp.CallToolRequest, r approvals.Resolver, sess *Waiting, key GrantKey, t Target) (res Resolution, none *noAnswer) {
	areq := a.Request(q, t)
	where := "by the external resolver"
	if l, ok := r.(approvals.Locator); ok {
		where = l.Where(areq.ID)
	}

	w := sess.Wait(key, t)
	defer sess.Unwait(w)
	rctx, cancel := context.WithTimeout(ctx, a.Timeout)
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
	defer a.progress(ctx, req, fmt.Sprintf("mcpwarden: %s is waiting for approval %s", q.Tool, where))()

	select {
	case rep := <-replies:
		received = true
		by := grantedByVia(rep.d.Via)
		switch {
		case ctx.Err() != nil:
			return a.cancelled(q, by), nil
		case rep.err != nil && errors.Is(rctx.Err(), context.DeadlineExceeded):
			return a.timedOutAt(q, where), nil
		case rep.err != nil:
			return Resolution{}, &noAnswer{why: resolverName(rep.d.Via) + " gave no answer", failure: rep.err.Error()}
		}
		return a.decided(ctx, q, sess, key, t, rep.d), nil
	case ans := <-w.Done():
		return a.byGrant(q, ans), nil
	}
}

// Request is the ask q (about t) as the approvals page and the resolvers get
// it: the arguments with credentials hidden, every form of every path, the
// form's lines in full, and the texts that come from the client, the
// upstream or the config (client, tool, principal, rule) with hidden
// characters escaped (argview.Escape), as the form shows them.
func (a *Asker) Request(q *Question, t Target) approvals.Request {
	areq := approvals.Request{
		ID:        approvals.NewID(),
		Tool:      argview.Escape(q.Tool),
		Server:    argview.Escape(q.Server),
		Session:   q.Session,
		Principal: argview.Escape(q.Principal),
		Rule:      argview.Escape(q.Verdict.Rule),
		Gate:      q.Verdict.Gate,
		Arguments: argview.Hide(q.Args, q.IsPathKey),
		Paths:     q.View().Paths,
		Lines:     argview.Render(q.View(), 0).Lines,
		AskedAt:   time.Now(),
	}
	if t.Earns && !t.Pathless {
		areq.Folders = t.Folders
	}
	if t.Endpoint != "" {
		// What the request is, first: the page and the resolvers show
		// the lines as the form does.
		areq.Lines = append([]string{q.Summary}, areq.Lines...)
	}
	if q.Client != nil {
		areq.Client = argview.Escape(strings.TrimSpace(q.Client.Name + " " + q.Client.Version))
	}
	return areq
}

// viaText names a channel in the audit reason and the model's text.
func viaText(v approvals.Via) string {
	switch v {
	case approvals.ViaPage:
		return "on the approvals page"
	case approvals.ViaCLI:
		return "with mcpwarden approve"
	}
	return "by the external resolver"
}

// grantedByVia is the audit event's granted_by of an answer that came
// through channel v: the approvals page, the CLI, else the external
// resolver.
func grantedByVia(v approvals.Via) audit.GrantedBy {
	switch v {
	case approvals.ViaPage:
		return audit.GrantedByApprovalPage
	case approvals.ViaCLI:
		return audit.GrantedByApprovalCLI
	}
	return audit.GrantedByResolver
}

// resolverName names the resolver behind a channel, for the audit reason.
func resolverName(v approvals.Via) string {
	switch v {
	case approvals.ViaPage, approvals.ViaCLI:
		return "the approvals page"
	}
	return "the external resolver"
}

// decided turns an out-of-band decision into a Resolution, remembering a
// session grant. granted_by names the channel; the reason names how and
// who.
func (a *Asker) decided(ctx context.Context, q *Question, sess *Waiting, key GrantKey, t Target, d approvals.Decision) Resolution {
	by := grantedByVia(d.Via)
	how := viaText(d.Via)
	who := ""
	if d.Who != "" && !strings.Contains(how, d.Who) {
		who = " by " + d.Who
	}
	switch d.Answer {
	case state.AllowOnce:
		return Resolution{Forward: true, GrantedBy: by, Reason: "allowed once " + how + who}
	case state.AllowSession, state.AllowFolder:
		sc := ScopeFor(t, state.AllowSession)
		if d.Answer == state.AllowFolder {
			sc = ScopeFor(t, state.AllowFolder)
		}
		err := a.Keep.Remember(ctx, sess, q.Session, key, state.AllowSession, sc)
		return withGrantFailure(Resolution{Forward: true, GrantedBy: by, Reason: "allowed for the session (" + sc.String() + ") " + how + who}, err)
	default:
		if d.Via == approvals.ViaCLI {
			how = "with mcpwarden deny"
		}
		res := a.refused(q, by, "denied "+how)
		res.Reason += who
		return res
	}
}

// progress sends the client progress notifications with msg, now and
// every progressEvery, if the call carries a progress token. The returned
// func stops them and waits until they have stopped.
func (a *Asker) progress(ctx context.Context, req mcp.CallToolRequest, msg string) (stop func()) {
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
			_ = a.MCP.SendNotificationToClient(pctx, string(mcp.MethodNotificationProgress), map[string]any{
				"progressToken": token,
				"progress":      time.Since(start).Seconds(),
				"total":         a.Timeout.Seconds(),
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
