package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// A client of protocol 2026-07-28 has no resources/subscribe: it names
// the resources whose notifications/resources/updated it wants in the
// filter of a subscriptions/listen request, on whose response stream it
// gets them. mcp-go's server answers the request itself, and fans
// resources/updated out to no one (it is not broadcast), so mcpwarden
// subscribes upstream to each resource named, decided as a
// resources/subscribe is, before the stream opens (listenSubscriptions),
// keeps the open streams (listenStreams), and sends an upstream's
// resources/updated to those that name its resource (notifyListening).
// Closing the stream does not unsubscribe upstream: its resources stay
// subscribed (listenSubscriber), as other clients' may (subscribers).

// listenSubscriptions decides and forwards, as resources/subscribe, each
// resource the subscriptions/listen request raw names. An error refuses
// the request.
func (s *Server) listenSubscriptions(ctx context.Context, raw json.RawMessage) error {
	var req struct {
		Params mcp.SubscriptionsListenParams `json:"params"`
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		return fmt.Errorf("the subscriptions/listen request cannot be read: %w", err)
	}
	for _, uri := range req.Params.Notifications.ResourceSubscriptions {
		if err := s.catalog.subscription(ctx, mcp.MethodResourcesSubscribe, uri, listenSubscriber); err != nil {
			return fmt.Errorf("subscribing to %q: %w", uri, err)
		}
	}
	return nil
}

// listenStreams are the open subscriptions/listen streams of 2026-07-28
// clients that name resources, each until its request ends.
type listenStreams struct {
	mu      sync.Mutex
	streams map[*listenStream]struct{}
}

type listenStream struct {
	session   server.ClientSession // the stream's: what is sent to it goes on the stream
	principal string
	profile   string
	uris      []string // as the client knows them
}

// listening is mcp-go's hook before it serves a subscriptions/listen
// request: a stream that names resources is kept until ctx, the
// request's, ends.
func (s *Server) listening(ctx context.Context, _ any, req *mcp.SubscriptionsListenRequest) {
	uris := req.Params.Notifications.ResourceSubscriptions
	cs := server.ClientSessionFromContext(ctx)
	if len(uris) == 0 || cs == nil {
		return
	}
	l := &listenStream{session: cs, principal: s.principalOf(ctx), profile: s.profileOf(ctx), uris: slices.Clone(uris)}
	ls := &s.listens
	ls.mu.Lock()
	if ls.streams == nil {
		ls.streams = map[*listenStream]struct{}{}
	}
	ls.streams[l] = struct{}{}
	ls.mu.Unlock()
	context.AfterFunc(ctx, func() {
		ls.mu.Lock()
		delete(ls.streams, l)
		ls.mu.Unlock()
	})
}

// notify sends params, an upstream's notifications/resources/updated
// whose uri is the one clients know, to every open listen stream that
// names it, whose profile may read the server's resources and which, from
// an isolated child, is one of the principal it serves. A stream that
// cannot take it at once misses it, as mcp-go's broadcasts do.
func (ls *listenStreams) notify(policy *rules.Policy, from *upstream.Route, srv string, params map[string]any) {
	uri, _ := params["uri"].(string)
	if uri == "" {
		return
	}
	// The stream tags it with the client's subscription id; the
	// upstream's _meta (its own stream's id among it) is not the client's.
	fields := make(map[string]any, len(params))
	for k, v := range params {
		if k != "_meta" {
			fields[k] = v
		}
	}
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: mcp.MethodNotificationResourceUpdated,
		Params: mcp.NotificationParams{AdditionalFields: fields},
	}}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for l := range ls.streams {
		if !slices.Contains(l.uris, uri) || !from.Serves(l.principal, l.session.SessionID()) ||
			policy.Hidden(rules.Call{Profile: l.profile, Server: srv, Tool: string(mcp.MethodResourcesRead)}) {
			continue
		}
		select {
		case l.session.NotificationChannel() <- n:
		default:
		}
	}
}
