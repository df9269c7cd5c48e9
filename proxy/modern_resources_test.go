package proxy

import (
	"context"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// A watchingUpstream is an upstream of protocol 2026-07-28 alone with
// resources that can be subscribed to. There, a client subscribes by
// naming the resources in the filter of its subscriptions/listen stream,
// and notifications/resources/updated of a resource is sent only on a
// stream that names it. listens holds every listen stream mcpwarden
// opened, newest last.
type watchingUpstream struct {
	srv *server.MCPServer

	mu      sync.Mutex
	listens []upstreamListen
}

type upstreamListen struct {
	ctx     context.Context // ends with the stream
	session server.ClientSession
	uris    []string
}

func newWatchingUpstream(t *testing.T) (*watchingUpstream, upstream.Spec) {
	t.Helper()
	u := &watchingUpstream{}
	hooks := &server.Hooks{}
	hooks.AddBeforeSubscriptionsListen(func(ctx context.Context, _ any, req *mcp.SubscriptionsListenRequest) {
		u.mu.Lock()
		defer u.mu.Unlock()
		u.listens = append(u.listens, upstreamListen{ctx, server.ClientSessionFromContext(ctx), req.Params.Notifications.ResourceSubscriptions})
	})
	// Subscribable resources, and no list changes: a listen stream is
	// opened only for a subscription.
	u.srv = server.NewMCPServer("watched", "1.0", server.WithResourceCapabilities(true, false), server.WithHooks(hooks))
	for _, uri := range []string{"file:///watched.txt", "file:///other.txt"} {
		u.srv.AddResource(mcp.NewResource(uri, uri), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, Text: "v1"}}, nil
		})
	}
	hs := httptest.NewServer(testkit.Refusing(server.NewStreamableHTTPServer(u.srv), mcp.MethodInitialize))
	t.Cleanup(hs.Close)
	return u, upstream.Spec{Transport: upstream.TransportHTTP, URL: hs.URL + "/mcp"}
}

// updated sends notifications/resources/updated of uri on every open
// listen stream that names it, as a server of 2026-07-28 does, and
// reports how many there were.
func (u *watchingUpstream) updated(uri string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for _, l := range u.listens {
		if l.ctx.Err() != nil || !slices.Contains(l.uris, uri) {
			continue
		}
		l.session.NotificationChannel() <- mcp.JSONRPCNotification{
			JSONRPC:      mcp.JSONRPC_VERSION,
			Notification: mcp.Notification{Method: mcp.MethodNotificationResourceUpdated, Params: mcp.NotificationParams{AdditionalFields: map[string]any{"uri": uri}}},
		}
		n++
	}
	return n
}

// watchedEnv is a proxy in front of a watchingUpstream, "up", and a client
// of the handshake, with the URIs of the resources/updated it is sent.
func watchedEnv(t *testing.T) (*watchingUpstream, *client.Client, <-chan string) {
	t.Helper()
	u, spec := newWatchingUpstream(t)
	srv, pool, _ := proxyFor(t, spec, allowAll)
	if got := pool.Protocol("up"); got != mcp.ProtocolVersion20260728 {
		t.Fatalf("the upstream speaks %q, want %s", got, mcp.ProtocolVersion20260728)
	}
	updates := make(chan string, 4)
	c := testkit.Connect(t, srv.MCP(), "2025-11-25", client.WithLegacyProtocolOnly())
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == mcp.MethodNotificationResourceUpdated {
			uri, _ := n.Params.AdditionalFields["uri"].(string)
			if _, tagged := n.Params.Meta[mcp.MetaKeySubscriptionID]; tagged {
				uri += " (tagged with the upstream's subscription id)"
			}
			updates <- uri
		}
	})
	return u, c, updates
}

func TestModernUpstreamsResourceUpdatedReachesTheSubscribedClient(t *testing.T) {
	t.Parallel()
	u, c, updates := watchedEnv(t)
	if err := c.Subscribe(t.Context(), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: "file:///watched.txt"}}); err != nil {
		t.Fatalf("subscribing: %v", err)
	}
	// The subscription holds once it is answered: the upstream has the
	// stream that names the resource by then.
	if n := u.updated("file:///watched.txt"); n != 1 {
		t.Fatalf("the upstream has %d listen streams naming the resource, want 1", n)
	}
	select {
	case got := <-updates:
		if got != "file:///watched.txt" {
			t.Errorf("the client was told %q changed, want file:///watched.txt", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream's resources/updated never reached the subscribed client")
	}

	// Unsubscribing closes the stream that names it.
	if err := c.Unsubscribe(t.Context(), mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: "file:///watched.txt"}}); err != nil {
		t.Fatalf("unsubscribing: %v", err)
	}
	testkit.Eventually(t, 10*time.Second, "no stream naming the resource", func() bool { return u.updated("file:///watched.txt") == 0 })
}

func TestModernUpstreamKeepsOtherSubscriptionsWhenOneEnds(t *testing.T) {
	t.Parallel()
	u, c, updates := watchedEnv(t)
	for _, uri := range []string{"file:///watched.txt", "file:///other.txt"} {
		if err := c.Subscribe(t.Context(), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}}); err != nil {
			t.Fatalf("subscribing to %s: %v", uri, err)
		}
	}
	if err := c.Unsubscribe(t.Context(), mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: "file:///watched.txt"}}); err != nil {
		t.Fatalf("unsubscribing: %v", err)
	}
	testkit.Eventually(t, 10*time.Second, "no stream naming the resource unsubscribed from", func() bool { return u.updated("file:///watched.txt") == 0 })
	if n := u.updated("file:///other.txt"); n != 1 {
		t.Fatalf("%d listen streams name the resource still subscribed to, want 1", n)
	}
	timeout := time.After(10 * time.Second)
	for {
		select {
		case got := <-updates:
			if got == "file:///other.txt" {
				return
			}
			// One sent on the old stream as it closed may come first.
		case <-timeout:
			t.Fatal("the update of the resource still subscribed to never reached the client")
		}
	}
}

// modernListener is a proxy with the global policy global in front of a
// watchingUpstream, "up", served over streamable HTTP, and a client of
// 2026-07-28 connected to it, with the URIs of the resources/updated it
// is sent and its listen streams' acknowledgements.
func modernListener(t *testing.T, global rules.PolicySpec) (*watchingUpstream, *client.Client, *memorySink, <-chan string, <-chan struct{}) {
	t.Helper()
	u, spec := newWatchingUpstream(t)
	srv, _, sink := proxyFor(t, spec, global)
	tr, err := transport.NewStreamableHTTP(serveHTTP(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	testkit.Initialize(t, c, mcp.ProtocolVersion20260728)
	updates, acked := make(chan string, 4), make(chan struct{}, 4)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		switch n.Method {
		case mcp.MethodNotificationResourceUpdated:
			uri, _ := n.Params.AdditionalFields["uri"].(string)
			updates <- uri
		case mcp.MethodNotificationSubscriptionsAcknowledged:
			acked <- struct{}{}
		}
	})
	return u, c, sink, updates, acked
}

func TestModernClientsListenStreamGetsTheResourceUpdatesItNames(t *testing.T) {
	t.Parallel()
	u, c, sink, updates, acked := modernListener(t, allowAll)
	// On 2026-07-28 a client subscribes by naming the resource in its
	// subscriptions/listen stream's filter.
	stop, err := c.ListenAsync(t.Context(), mcp.SubscriptionFilter{ResourceSubscriptions: []string{"file:///watched.txt"}}, func(err error) { t.Errorf("the listen stream failed: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	select {
	case <-acked:
	case <-time.After(10 * time.Second):
		t.Fatal("the listen stream was never acknowledged")
	}
	if n := u.updated("file:///other.txt"); n != 0 {
		t.Fatalf("the upstream has %d listen streams naming a resource the client did not name, want 0", n)
	}
	if n := u.updated("file:///watched.txt"); n != 1 {
		t.Fatalf("the upstream has %d listen streams naming the resource, want 1: the client's subscription was not passed on", n)
	}
	select {
	case got := <-updates:
		if got != "file:///watched.txt" {
			t.Errorf("the client was told %q changed, want file:///watched.txt", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream's resources/updated never reached the client's listen stream")
	}
	if ev := decisionsOf(t, sink, "mcp:up:resources/subscribe"); len(ev) != 1 || ev[0].Decision != "allow" {
		t.Errorf("decisions = %+v, want the subscription decided and allowed once", ev)
	}
}

func TestModernClientsListenNamingADeniedResourceIsRefused(t *testing.T) {
	t.Parallel()
	u, c, sink, _, _ := modernListener(t, rules.PolicySpec{Allow: []string{"mcp:up:*"}, Deny: []string{"mcp:up:resources/subscribe"}})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	err := c.Listen(ctx, mcp.SubscriptionFilter{ResourceSubscriptions: []string{"file:///watched.txt"}})
	if err == nil || ctx.Err() != nil {
		t.Fatalf("a listen stream naming a resource the rules deny subscribing to was opened (err %v)", err)
	}
	if n := u.updated("file:///watched.txt"); n != 0 {
		t.Errorf("the upstream has %d listen streams naming the denied resource, want 0", n)
	}
	if ev := decisionsOf(t, sink, "mcp:up:resources/subscribe"); len(ev) != 1 || ev[0].Decision != "deny" {
		t.Errorf("decisions = %+v, want the subscription decided and denied once", ev)
	}
}

func TestOneClientsUnsubscribeKeepsAnotherClientsSubscription(t *testing.T) {
	t.Parallel()
	u, spec := newWatchingUpstream(t)
	srv, _, _ := proxyFor(t, spec, allowAll)
	a := testkit.Connect(t, srv.MCP(), "2025-11-25", client.WithLegacyProtocolOnly())
	b := testkit.Connect(t, srv.MCP(), "2025-11-25", client.WithLegacyProtocolOnly())
	const uri = "file:///watched.txt"
	for _, c := range []*client.Client{a, b} {
		if err := c.Subscribe(t.Context(), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}}); err != nil {
			t.Fatalf("subscribing: %v", err)
		}
	}
	if err := b.Unsubscribe(t.Context(), mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: uri}}); err != nil {
		t.Fatalf("unsubscribing: %v", err)
	}
	// The upstream keeps a stream naming it: a is still subscribed.
	time.Sleep(100 * time.Millisecond)
	if n := u.updated(uri); n != 1 {
		t.Fatalf("%d upstream listen streams name the resource after one of two clients unsubscribed, want 1", n)
	}
	// A client that never subscribed cannot end another's subscription.
	c := testkit.Connect(t, srv.MCP(), "2025-11-25", client.WithLegacyProtocolOnly())
	if err := c.Unsubscribe(t.Context(), mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: uri}}); err != nil {
		t.Fatalf("unsubscribing: %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	if n := u.updated(uri); n != 1 {
		t.Fatalf("%d upstream listen streams name the resource after a client that never subscribed unsubscribed, want 1", n)
	}
	// The last one's unsubscribe ends it.
	if err := a.Unsubscribe(t.Context(), mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: uri}}); err != nil {
		t.Fatalf("unsubscribing: %v", err)
	}
	testkit.Eventually(t, 10*time.Second, "no stream naming the resource once every client unsubscribed", func() bool { return u.updated(uri) == 0 })
}

func TestEndedSessionsSubscriptionEndsUpstream(t *testing.T) {
	t.Parallel()
	u, spec := newWatchingUpstream(t)
	srv, _, _ := proxyFor(t, spec, allowAll)
	c := testkit.Connect(t, srv.MCP(), "2025-11-25", client.WithLegacyProtocolOnly())
	const uri = "file:///watched.txt"
	if err := c.Subscribe(t.Context(), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}}); err != nil {
		t.Fatalf("subscribing: %v", err)
	}
	testkit.Eventually(t, 10*time.Second, "a stream naming the resource", func() bool { return u.updated(uri) == 1 })
	c.Close()
	testkit.Eventually(t, 10*time.Second, "no stream naming the resource once its only subscriber's session ended", func() bool { return u.updated(uri) == 0 })
}
