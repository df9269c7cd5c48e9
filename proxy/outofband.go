package proxy

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
	"github.com/mcpwarden/mcpwarden/proxy/ask"
)

// progressEvery is how often a call waiting for an out-of-band answer
// tells the client where to answer, when it asked for progress.
const progressEvery = 5 * time.Second

// outOfBand holds the ask while resolver r decides it, telling a client
// that asked for progress where to answer. A session grant given
// meanwhile (to a concurrent call) settles it too. none is set when r gave
// no answer (it failed).
func (a *asker) outOfBand(ctx context.Context, c *call, req mcp.CallToolRequest, r approvals.Resolver, sess *ask.Waiting, key ask.GrantKey, t ask.Target) (res resolution, none *noAnswer) {
	areq := a.request(c, t)
	where := "by the external resolver"
	if l, ok := r.(approvals.Locator); ok {
		where = l.Where(areq.ID)
	}

	w := sess.Wait(key, t)
	defer sess.Unwait(w)
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

	select {
	case rep := <-replies:
		received = true
		by := grantedByVia(rep.d.Via)
		switch {
		case ctx.Err() != nil:
			return a.cancelled(c, by), nil
		case rep.err != nil && errors.Is(rctx.Err(), context.DeadlineExceeded):
			return a.timedOutAt(c, where), nil
		case rep.err != nil:
			return resolution{}, &noAnswer{why: resolverName(rep.d.Via) + " gave no answer", failure: rep.err.Error()}
		}
		return a.decided(ctx, c, sess, key, t, rep.d), nil
	case ans := <-w.Done():
		return a.byGrant(c, ans), nil
	}
}

// request is the ask about c as the approvals page and the resolvers get
// it: the arguments with credentials hidden, every form of every path, the
// form's lines in full, and the texts that come from the client, the
// upstream or the config (client, tool, principal, rule) with hidden
// characters escaped (argview.Escape), as the form shows them.
func (a *asker) request(c *call, t ask.Target) approvals.Request {
	areq := approvals.Request{
		ID:        approvals.NewID(),
		Tool:      argview.Escape(c.tool.Canonical),
		Server:    argview.Escape(c.tool.Server),
		Session:   c.session,
		Principal: argview.Escape(c.principal),
		Rule:      argview.Escape(c.verdict.Rule),
		Gate:      c.verdict.Gate,
		Arguments: argview.Hide(c.args, c.policy.IsPathKey),
		Paths:     pathViews(c),
		Lines:     argview.Render(a.viewOf(c), 0).Lines,
		AskedAt:   time.Now(),
	}
	if t.Earns && !t.Pathless {
		areq.Folders = t.Folders
	}
	if t.Endpoint != "" {
		// What the request is, first: the page and the resolvers show
		// the lines as the form does.
		areq.Lines = append([]string{connectSummary(c, t)}, areq.Lines...)
	}
	if c.client != nil {
		areq.Client = argview.Escape(strings.TrimSpace(c.client.Name + " " + c.client.Version))
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

// decided turns an out-of-band decision into a resolution, remembering a
// session grant. granted_by names the channel; the reason names how and
// who.
func (a *asker) decided(ctx context.Context, c *call, sess *ask.Waiting, key ask.GrantKey, t ask.Target, d approvals.Decision) resolution {
	by := grantedByVia(d.Via)
	how := viaText(d.Via)
	who := ""
	if d.Who != "" && !strings.Contains(how, d.Who) {
		who = " by " + d.Who
	}
	switch d.Answer {
	case approvals.AllowOnce:
		return resolution{forward: true, grantedBy: by, reason: "allowed once " + how + who}
	case approvals.AllowSession, approvals.AllowFolder:
		sc := ask.ScopeFor(t, ask.AllowSession)
		if d.Answer == approvals.AllowFolder {
			sc = ask.ScopeFor(t, ask.AllowFolder)
		}
		err := a.keep.Remember(ctx, sess, c.session, key, ask.AllowSession, sc)
		return withGrantFailure(resolution{forward: true, grantedBy: by, reason: "allowed for the session (" + sc.String() + ") " + how + who}, err)
	default:
		if d.Via == approvals.ViaCLI {
			how = "with mcpwarden deny"
		}
		res := a.refused(c, by, "denied "+how)
		res.reason += who
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
