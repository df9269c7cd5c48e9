package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/state"
)

// With shared state (BrokerOptions.Shared) a Broker lists its asks in
// the state replicas share, so that the approvals page or `mcpwarden
// approve` on any replica lists every replica's pending asks and settles
// an ask waiting on another: the answer reaches the waiting replica
// through the shared state (pub/sub in Redis). The history stays with
// the replica that asked. A shared state that cannot be reached fails an
// ask (the call goes on to the next resolver, or ask_fallback) and an
// answer (the human gets an error), never silently.

// DefaultSharedAskTTL is how long a shared ask stays listed when its
// context has no deadline. An ask's deadline (ask.timeout) bounds it
// otherwise.
const DefaultSharedAskTTL = 10 * time.Minute

// answerTakeWait bounds how long an answer given with shared state waits
// for the replica that asked to take it: that replica's waiter is woken
// at once (pub/sub) or looks every second, so one that does not take it
// by then has stopped.
const answerTakeWait = 3 * time.Second

// SharedPoll is how often an event stream of the page looks for asks
// listed or answered on other replicas.
const SharedPoll = time.Second

// decisionJSON is an answer as the shared state carries it.
type decisionJSON struct {
	Answer state.Answer `json:"answer"`
	Via    Via          `json:"via"`
	Who    string       `json:"who,omitempty"`
}

// askTTL is how long an ask made with ctx stays listed: until ctx's
// deadline and a little more (the waiter withdraws it then), else
// DefaultSharedAskTTL.
func askTTL(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), 0) + 5*time.Second
	}
	return DefaultSharedAskTTL
}

// resolveShared lists req in the shared state and waits for its answer
// from any replica; p is its entry among this broker's own asks.
func (b *Broker) resolveShared(ctx context.Context, req Request, p *pendingAsk) (Decision, error) {
	fail := Decision{Answer: state.Deny, Via: ViaPage}
	defer b.forget(p)
	body, err := json.Marshal(req)
	if err != nil {
		return fail, fmt.Errorf("encoding ask %q: %w", req.ID, err)
	}
	if err := b.shared.PublishAsk(ctx, state.Ask{ID: req.ID, AskedAt: req.AskedAt, Body: body}, askTTL(ctx)); err != nil {
		return fail, fmt.Errorf("listing ask %q in the shared state: %w", req.ID, err)
	}
	if b.notify != nil {
		b.notify(req)
	}
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() { // ends with wctx, which the deferred cancel ends
		select {
		case <-b.done:
			cancel(ErrClosed)
		case <-wctx.Done():
		}
	}()
	raw, err := b.shared.WaitAnswer(wctx, req.ID)
	if err == nil {
		// The answer goes with it; one left behind expires with the ask.
		_, _, _ = b.shared.WithdrawAsk(context.WithoutCancel(ctx), req.ID)
		return b.answered(req, raw)
	}
	// No answer: withdraw the ask, unless it was answered meanwhile.
	ans, answered, werr := b.shared.WithdrawAsk(context.WithoutCancel(ctx), req.ID)
	if werr == nil && answered {
		return b.answered(req, ans)
	}
	outcome := OutcomeWithdrawn
	switch {
	case errors.Is(context.Cause(wctx), ErrClosed):
		outcome, err = OutcomeClosed, ErrClosed
	case ctx.Err() != nil:
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			outcome = OutcomeTimeout
		}
		err = ctx.Err()
	default:
		err = fmt.Errorf("waiting for the answer to ask %q in the shared state: %w", req.ID, err)
	}
	b.record(Decided{Request: req, Outcome: outcome, DecidedAt: time.Now()})
	return fail, err
}

// answered reads an answer from the shared state and records it.
func (b *Broker) answered(req Request, raw json.RawMessage) (Decision, error) {
	var d decisionJSON
	if err := json.Unmarshal(raw, &d); err != nil {
		return Decision{Answer: state.Deny, Via: ViaPage}, fmt.Errorf("reading the answer to ask %q: %w", req.ID, err)
	}
	b.record(Decided{Request: req, Outcome: d.Answer.String(), Via: d.Via, Who: d.Who, DecidedAt: time.Now()})
	return Decision{Answer: d.Answer, Via: d.Via, Who: d.Who}, nil
}

// decideShared answers ask id in the shared state, waking its waiter on
// whichever replica it is.
func (b *Broker) decideShared(ctx context.Context, id string, a state.Answer, via Via, who string) error {
	raw, err := json.Marshal(decisionJSON{Answer: a, Via: via, Who: who})
	if err != nil {
		return fmt.Errorf("encoding the answer to ask %q: %w", id, err)
	}
	if err := b.shared.AnswerAsk(ctx, id, raw); err != nil {
		if errors.Is(err, state.ErrNotFound) {
			return fmt.Errorf("%w: %q", ErrUnknownAsk, id)
		}
		return fmt.Errorf("answering ask %q in the shared state: %w", id, err)
	}
	return b.awaitTaken(ctx, id, a)
}

// awaitTaken waits, up to answerTakeWait, for the replica that asked to
// take the answer to ask id: its waiter withdraws the ask, answer and
// all, so the ask is no longer found. An answer left there is
// ErrAnswerNotTaken.
func (b *Broker) awaitTaken(ctx context.Context, id string, a state.Answer) error {
	ctx, cancel := context.WithTimeout(ctx, answerTakeWait)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		_, err := b.shared.WaitAnswer(ctx, id) // at once: the answer is there until taken
		switch {
		case errors.Is(err, state.ErrNotFound):
			return nil // taken
		case err != nil && ctx.Err() == nil:
			return fmt.Errorf("checking that ask %q was taken: %w", id, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: ask %q was answered (%s), but no replica took the answer within %s: the replica that asked has stopped or lost the shared state, so nothing runs; the caller gets no answer and may call again",
				ErrAnswerNotTaken, id, a, answerTakeWait)
		case <-tick.C:
		}
	}
}

// pendingShared lists the asks pending on every replica, oldest first.
func (b *Broker) pendingShared(ctx context.Context, now time.Time) ([]Pending, error) {
	asks, err := b.shared.PendingAsks(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the pending asks in the shared state: %w", err)
	}
	out := make([]Pending, 0, len(asks))
	for _, a := range asks {
		var req Request
		if json.Unmarshal(a.Body, &req) != nil || req.ID != a.ID {
			continue // not an ask this code listed
		}
		out = append(out, Pending{Request: req, WaitedMS: now.Sub(req.AskedAt).Milliseconds()})
	}
	return out, nil
}

// forget drops p from this broker's own asks.
func (b *Broker) forget(p *pendingAsk) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending[p.req.ID] == p {
		delete(b.pending, p.req.ID)
		b.changedLocked()
	}
}

// record adds d to the history.
func (b *Broker) record(d Decided) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.recordLocked(d)
	b.changedLocked()
}

// SnapshotContext is Snapshot, listing the pending asks of every replica
// when the state is shared; the error is the shared state's. The channel
// is closed at the next change made through this broker; changes made on
// other replicas are seen by asking again (see SharedPoll).
func (b *Broker) SnapshotContext(ctx context.Context) (Snapshot, <-chan struct{}, error) {
	s, changed := b.Snapshot()
	if b.shared == nil {
		return s, changed, nil
	}
	pending, err := b.pendingShared(ctx, s.Now)
	if err != nil {
		return s, changed, err
	}
	s.Pending = pending
	return s, changed, nil
}

// DecideContext is Decide: with shared state it answers an ask pending
// on any replica.
func (b *Broker) DecideContext(ctx context.Context, id string, a state.Answer, via Via, who string) error {
	if b.shared == nil {
		return b.Decide(id, a, via, who)
	}
	if a > state.AllowFolder { // what a resolver, the page or the CLI may answer (ParseAnswer)
		return fmt.Errorf("invalid answer %d", uint8(a))
	}
	if strings.ContainsRune(id, ':') {
		// Not an ask: the shared state's other waiters (the proxy's
		// claims on request IDs, "relay:…") are not the page's to answer.
		return fmt.Errorf("%w: %q", ErrUnknownAsk, id)
	}
	return b.decideShared(ctx, id, a, via, who)
}

// Shared reports whether the broker's asks are shared with other
// replicas.
func (b *Broker) Shared() bool { return b.shared != nil }
