package approvals

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/state"
)

// DefaultHistory is how many decided asks a Broker remembers when
// BrokerOptions sets none.
const DefaultHistory = 20

// DefaultMaxPending bounds the asks a Broker holds when BrokerOptions sets
// no bound.
const DefaultMaxPending = 1024

// BrokerOptions configure a Broker. The zero value is usable.
type BrokerOptions struct {
	// URL is the approvals page's address, without its token, for the
	// directions Where gives; "" names only the CLI.
	URL string
	// History is how many decided asks Snapshot lists; 0 means
	// DefaultHistory.
	History int
	// MaxPending bounds the pending asks; an ask beyond it is refused with
	// ErrFull. 0 means DefaultMaxPending.
	MaxPending int
	// Notify, when set, is called once for every new pending ask, after it
	// is listed, in the asking goroutine: it should return quickly.
	Notify func(Request)
	// Shared, when set, is where the asks are listed and answered for
	// every replica (config state:; see shared.go); nil keeps them in
	// this broker. The Broker does not close it.
	Shared state.Asks
}

// A Broker holds pending asks until a human answers them (Decide) through
// the approvals page or the CLI, and keeps a short history of decided ones.
// It is safe for concurrent use.
type Broker struct {
	url     string
	history int
	max     int
	notify  func(Request)
	shared  state.Asks    // nil: asks live in this broker only
	done    chan struct{} // closed by Close

	mu      sync.Mutex
	pending map[string]*pendingAsk
	recent  []Decided     // newest first, at most history
	changed chan struct{} // closed and replaced on every change
	closed  bool
}

type pendingAsk struct {
	req    Request
	answer chan Decision // buffered; receives the one answer
}

// A Pending is an ask waiting for an answer.
type Pending struct {
	Request
	// WaitedMS is how long it had waited when the snapshot was taken.
	WaitedMS int64 `json:"waited_ms"`
}

// Outcomes of a decided ask besides the answers' names.
const (
	OutcomeTimeout   = "timeout"   // no answer before the ask's deadline
	OutcomeWithdrawn = "withdrawn" // the call was cancelled or settled otherwise (a session grant)
	OutcomeClosed    = "closed"    // mcpwarden shut down
)

// A Decided is an ask that is no longer pending, for the history.
type Decided struct {
	Request
	// Outcome is the answer's name (allow_once, allow_session, deny) or
	// one of the Outcome constants.
	Outcome   string    `json:"outcome"`
	Via       Via       `json:"via,omitempty"`
	Who       string    `json:"who,omitempty"`
	DecidedAt time.Time `json:"decided_at"`
}

// A Snapshot is the broker's state at one moment: pending asks, oldest
// first, and the history, newest first.
type Snapshot struct {
	Now     time.Time `json:"now"`
	Pending []Pending `json:"pending"`
	Recent  []Decided `json:"recent"`
}

// NewBroker returns an empty Broker.
func NewBroker(o *BrokerOptions) *Broker {
	if o == nil {
		o = &BrokerOptions{}
	}
	b := &Broker{
		url:     o.URL,
		history: cmp.Or(o.History, DefaultHistory),
		max:     cmp.Or(o.MaxPending, DefaultMaxPending),
		notify:  o.Notify,
		shared:  o.Shared,
		done:    make(chan struct{}),
		pending: map[string]*pendingAsk{},
		changed: make(chan struct{}),
	}
	return b
}

// Resolve lists req as pending and waits for its answer, until ctx is done
// (the error is then ctx's) or the broker closes (ErrClosed). An answer
// given at the same moment the deadline passes still counts.
func (b *Broker) Resolve(ctx context.Context, req Request) (Decision, error) {
	fail := Decision{Answer: state.Deny, Via: ViaPage}
	if req.ID == "" {
		req.ID = NewID()
	}
	if req.AskedAt.IsZero() {
		req.AskedAt = time.Now()
	}
	p := &pendingAsk{req: req, answer: make(chan Decision, 1)}
	b.mu.Lock()
	switch {
	case b.closed:
		b.mu.Unlock()
		return fail, ErrClosed
	case len(b.pending) >= b.max:
		b.mu.Unlock()
		return fail, ErrFull
	case b.pending[req.ID] != nil:
		b.mu.Unlock()
		return fail, fmt.Errorf("ask id %q is pending already", req.ID)
	}
	b.pending[req.ID] = p
	b.changedLocked()
	b.mu.Unlock()
	if b.shared != nil {
		return b.resolveShared(ctx, req, p)
	}
	if b.notify != nil {
		b.notify(req)
	}

	select {
	case d := <-p.answer:
		return d, nil
	case <-ctx.Done():
		outcome := OutcomeWithdrawn
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			outcome = OutcomeTimeout
		}
		if d, ok := b.withdraw(p, outcome); ok {
			return d, nil
		}
		return fail, ctx.Err()
	case <-b.done:
		if d, ok := b.withdraw(p, OutcomeClosed); ok {
			return d, nil
		}
		return fail, ErrClosed
	}
}

// withdraw takes p off the pending list, recording outcome; when p was
// answered meanwhile it returns that answer instead.
func (b *Broker) withdraw(p *pendingAsk, outcome string) (Decision, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending[p.req.ID] != p {
		return <-p.answer, true // Decide removed it and sent the answer under mu
	}
	delete(b.pending, p.req.ID)
	b.recordLocked(Decided{Request: p.req, Outcome: outcome, DecidedAt: time.Now()})
	b.changedLocked()
	return Decision{}, false
}

// Decide answers the pending ask id. via and who say how and by whom, for
// the audit log and the history. An id that is not pending is
// ErrUnknownAsk. With shared state it is DecideContext without a
// deadline of its own (the store's timeout bounds it).
func (b *Broker) Decide(id string, a state.Answer, via Via, who string) error {
	if b.shared != nil {
		return b.DecideContext(context.Background(), id, a, via, who)
	}
	if a > state.AllowFolder { // what a resolver, the page or the CLI may answer (ParseAnswer)
		return fmt.Errorf("invalid answer %d", uint8(a))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok := b.pending[id]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownAsk, id)
	}
	delete(b.pending, id)
	d := Decision{Answer: a, Via: via, Who: who}
	p.answer <- d // buffered, and only Decide sends, once
	b.recordLocked(Decided{Request: p.req, Outcome: a.String(), Via: via, Who: who, DecidedAt: time.Now()})
	b.changedLocked()
	return nil
}

// Snapshot returns the current state and a channel that is closed at the
// next change.
func (b *Broker) Snapshot() (Snapshot, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	s := Snapshot{Now: now, Pending: make([]Pending, 0, len(b.pending)), Recent: slices.Clone(b.recent)}
	for _, p := range b.pending {
		s.Pending = append(s.Pending, Pending{Request: p.req, WaitedMS: now.Sub(p.req.AskedAt).Milliseconds()})
	}
	slices.SortFunc(s.Pending, func(x, y Pending) int {
		return cmp.Or(x.AskedAt.Compare(y.AskedAt), cmp.Compare(x.ID, y.ID))
	})
	if s.Recent == nil {
		s.Recent = []Decided{}
	}
	return s, b.changed
}

// Pending returns the pending asks, oldest first.
func (b *Broker) Pending() []Pending {
	s, _ := b.Snapshot()
	return s.Pending
}

// Where tells the human where to answer ask id. It holds no secret.
func (b *Broker) Where(id string) string {
	cli := fmt.Sprintf("with `mcpwarden approve %s` (or `mcpwarden deny %s`)", id, id)
	if b.url == "" {
		return cli
	}
	return fmt.Sprintf("at %s (open the link with its token that mcpwarden printed on stderr at start) or %s", b.url, cli)
}

// Done is closed when the broker closes.
func (b *Broker) Done() <-chan struct{} { return b.done }

// Close denies every pending ask (ErrClosed) and refuses new ones. It is
// idempotent.
func (b *Broker) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	close(b.done)
}

func (b *Broker) recordLocked(d Decided) {
	d.Arguments = nil // the history shows the call, not its arguments again
	b.recent = slices.Insert(b.recent, 0, d)
	if len(b.recent) > b.history {
		b.recent = b.recent[:b.history]
	}
}

func (b *Broker) changedLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}
