package proxy

import (
	"context"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
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
	listens []listenStream
}

type listenStream struct {
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
		u.listens = append(u.listens, listenStream{ctx, server.ClientSessionFromContext(ctx), req.Params.Notifications.ResourceSubscriptions})
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
