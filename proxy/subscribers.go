package proxy

import (
	"context"
	"sync"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/upstream"
)

// One upstream session serves every client (or every client of one
// principal, for a child isolated per principal), so a subscription to
// one of its resources is shared: subscribers counts the clients
// subscribed to each, so that a client's resources/unsubscribe ends the
// upstream's subscription only when no other client is subscribed, and a
// client session that ends is unsubscribed as if it had asked.
type subscribers struct {
	mu sync.Mutex
	by map[subscribed]*subscription
}

// A subscribed is a resource of one upstream session, by the URI the
// upstream knows it by.
type subscribed struct {
	upstream *client.Client
	uri      string
}

// A subscription is who is subscribed to a subscribed resource, and how
// to reach the upstream session to unsubscribe: its server, and the
// route of the first subscriber (which picks the same child of an
// isolated server).
type subscription struct {
	server   string
	route    upstream.Route
	sessions map[string]struct{}
}

// listenSubscriber stands for the subscriptions/listen streams of
// 2026-07-28 clients: closing a stream does not unsubscribe upstream
// (listen.go), so a resource one names stays subscribed.
const listenSubscriber = "(subscriptions/listen)"

// add records session's subscription to k, of server reached by route,
// and reports whether it is the first: the upstream is to be told.
func (ss *subscribers) add(k subscribed, server string, route upstream.Route, session string) (first bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.by == nil {
		ss.by = map[subscribed]*subscription{}
	}
	sub := ss.by[k]
	if sub == nil {
		sub = &subscription{server: server, route: route, sessions: map[string]struct{}{}}
		ss.by[k] = sub
	}
	_, had := sub.sessions[session]
	sub.sessions[session] = struct{}{}
	return len(sub.sessions) == 1 && !had
}

// remove drops session's subscription to k and reports whether no
// subscriber is left: the upstream is to be told. A session that was not
// subscribed leaves the others as they are; with none recorded at all
// (the subscription predates this process's count, or was never made
// through it) the upstream is told.
func (ss *subscribers) remove(k subscribed, session string) (last bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	sub := ss.by[k]
	if sub == nil {
		return true
	}
	delete(sub.sessions, session)
	if len(sub.sessions) > 0 {
		return false
	}
	delete(ss.by, k)
	return true
}

// drop removes every subscription of session and returns those no
// subscriber is left of.
func (ss *subscribers) drop(session string) map[subscribed]*subscription {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var ended map[subscribed]*subscription
	for k, sub := range ss.by {
		if _, ok := sub.sessions[session]; !ok {
			continue
		}
		delete(sub.sessions, session)
		if len(sub.sessions) == 0 {
			delete(ss.by, k)
			if ended == nil {
				ended = map[subscribed]*subscription{}
			}
			ended[k] = sub
		}
	}
	return ended
}

// endSubscriptions unsubscribes upstream, in the background, from what
// only session was subscribed to, as the session ended. It is
// mcpwarden's own request, on the session's behalf: not decided again.
func (cat *catalog) endSubscriptions(session string) {
	for k, sub := range cat.subs.drop(session) {
		cat.refreshG.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), subscribeTimeout)
			defer cancel()
			route := sub.route
			_, err := cat.ownRequest(ctx, sub.server, &route, func(ctx context.Context, cl *client.Client, _ mcp.ServerCapabilities) (any, error) {
				if cl != k.upstream {
					return nil, nil // the session that was subscribed is gone
				}
				return nil, cl.Unsubscribe(ctx, mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: k.uri}})
			})
			if err != nil {
				cat.logger.Debug("unsubscribing for a client session that ended", "server", sub.server, "uri", k.uri, "err", err)
			}
		})
	}
}
