package upstream

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// listenRetry is how long a session of protocol 2026-07-28 waits before
// it reopens a subscriptions/listen stream that ended.
const listenRetry = time.Second

// subscribeWait bounds how long a change of resource subscriptions waits
// for the server to acknowledge the stream that carries it.
const subscribeWait = 10 * time.Second

// A server of protocol 2026-07-28 has no standalone GET stream and no
// resources/subscribe: it sends the notifications a client opts in to on
// the response stream of a subscriptions/listen request, which it holds
// open, and the request's filter names what it opts in to — tools,
// prompts and resources list changes, and the resources whose
// notifications/resources/updated it wants. listen keeps one open for as
// long as ctx lasts, reopening it when it ends, for the changes caps says
// the server notifies and the resources subscribed to (mcp-go's client
// keeps those from Subscribe and Unsubscribe without sending anything:
// see resubscribe, which reopens the stream when they change); what
// arrives reaches the session's notification handler as on the GET
// stream. A session of the initialize handshake, or of a server that
// notifies nothing, does not listen.
func (s *session) listen(ctx context.Context, caps mcp.ServerCapabilities, logger *slog.Logger) {
	base := mcp.SubscriptionFilter{
		ToolsListChanged:     caps.Tools != nil && caps.Tools.ListChanged,
		PromptsListChanged:   caps.Prompts != nil && caps.Prompts.ListChanged,
		ResourcesListChanged: caps.Resources != nil && caps.Resources.ListChanged,
	}
	subscribable := caps.Resources != nil && caps.Resources.Subscribe
	if !mcp.IsModernProtocol(s.protocol) || (base.IsEmpty() && !subscribable) {
		return
	}
	l := &listener{changed: make(chan struct{}, 1), update: make(chan struct{})}
	s.listening = l
	s.client.OnNotification(l.noteAck)
	s.wg.Go(func() {
		for ctx.Err() == nil {
			filter := base
			filter.ResourceSubscriptions = s.client.PendingSubscriptionFilter().ResourceSubscriptions
			l.opening(filter.ResourceSubscriptions, filter.IsEmpty())
			if filter.IsEmpty() {
				select { // nothing to listen for until a subscription
				case <-l.changed:
				case <-ctx.Done():
				}
				continue
			}
			lctx, cancel := context.WithCancel(ctx)
			moved := make(chan bool, 1)
			watch := make(chan struct{})
			go func() {
				defer close(watch)
				select {
				case <-l.changed:
					moved <- true
					cancel()
				case <-lctx.Done():
					moved <- false
				}
			}()
			err := s.client.Listen(lctx, filter)
			cancel()
			<-watch
			if <-moved || ctx.Err() != nil {
				continue // reopened at once, with the subscriptions as they are now
			}
			logger.Warn("the upstream's subscriptions/listen stream ended; reopening it", "err", err, "retry_in", listenRetry)
			if !sleep(ctx, listenRetry) {
				return
			}
		}
	})
}

// A listener is what a session's subscriptions/listen stream was opened
// for, so that a change of subscriptions can wait until the server has
// acknowledged a stream that carries it.
type listener struct {
	changed chan struct{} // poked to reopen the stream with the subscriptions as they are now

	mu     sync.Mutex
	uris   []string      // the resources the stream being opened or open names, sorted
	acked  bool          // the server acknowledged the stream with uris (or there is none to acknowledge)
	update chan struct{} // closed, and replaced, when uris or acked change
}

// opening records that a stream naming uris is being opened (or, if
// none, that no stream is needed).
func (l *listener) opening(uris []string, none bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.uris, l.acked = sortedCopy(uris), none
	l.changedLocked()
}

// noteAck takes the session's notifications, and marks the stream being
// opened acknowledged on notifications/subscriptions/acknowledged: the
// streams are opened one after the other, so it is the new stream's, and
// what it names is what the server established (which may be less than
// asked for: the wait is over either way).
func (l *listener) noteAck(n mcp.JSONRPCNotification) {
	if n.Method != mcp.MethodNotificationSubscriptionsAcknowledged {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.acked = true
	l.changedLocked()
}

func (l *listener) changedLocked() {
	close(l.update)
	l.update = make(chan struct{})
}

// resubscribe makes the session's listen stream name the resources
// subscribed to now, if it does not: it has the stream reopened, and waits
// until the server acknowledges it, or ctx ends, or subscribeWait passes.
// A session that does not listen, or whose stream (open or being opened)
// names them already, has nothing to do: a request that changed no
// subscription does not wait for a stream that is down.
func (s *session) resubscribe(ctx context.Context) {
	l := s.listening
	if l == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, subscribeWait)
	defer cancel()
	for changing := false; ; changing = true {
		want := sortedCopy(s.client.PendingSubscriptionFilter().ResourceSubscriptions)
		l.mu.Lock()
		same, settled, update := slices.Equal(l.uris, want), l.acked, l.update
		l.mu.Unlock()
		if same && (settled || !changing) {
			return
		}
		if !same && settled {
			poke(l.changed)
		}
		select {
		case <-update:
		case <-ctx.Done():
			return
		}
	}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}
