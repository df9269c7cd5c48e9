package upstream

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// declared serves newStandIn(1), of the initialize handshake, and returns
// its URL and the client capabilities mcpwarden declares to it.
func declared(t *testing.T) (string, <-chan mcp.ClientCapabilities) {
	t.Helper()
	caps := make(chan mcp.ClientCapabilities, 4)
	hooks := &mcpserver.Hooks{}
	hooks.AddAfterInitialize(func(_ context.Context, _ any, req *mcp.InitializeRequest, _ *mcp.InitializeResult) {
		caps <- req.Params.Capabilities
	})
	srv := newStandIn(1)
	mcpserver.WithHooks(hooks)(srv)
	hs := httptest.NewServer(legacyOnly(mcpserver.NewStreamableHTTPServer(srv)))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp", caps
}

func TestSamplingIsNotDeclaredToAServerWhoseSamplingIsDenied(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name       string
		noSampling bool
	}{
		{"sampling denied", true},
		{"sampling decided by the rules", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			url, caps := declared(t)
			pool := New(map[string]Spec{"s": {Transport: TransportHTTP, URL: url, NoSampling: tt.noSampling}}, nil)
			t.Cleanup(func() { pool.Close() })
			pool.Start(t.Context(), nil)
			if err := pool.Err("s"); err != nil {
				t.Fatal(err)
			}
			select {
			case c := <-caps:
				if got := c.Sampling != nil; got == tt.noSampling {
					t.Errorf("sampling declared: %v, want %v", got, !tt.noSampling)
				}
				if c.Elicitation == nil || c.Roots == nil || !c.Roots.ListChanged {
					t.Errorf("capabilities %+v, want elicitation and roots with listChanged", c)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("never initialized")
			}
		})
	}
}

func TestRootsChangedIsSentToTheUpstream(t *testing.T) {
	t.Parallel()
	srv := newStandIn(1)
	changed := make(chan struct{}, 4)
	srv.AddNotificationHandler(mcp.MethodNotificationRootsListChanged, func(context.Context, mcp.JSONRPCNotification) { changed <- struct{}{} })
	hs := httptest.NewServer(legacyOnly(mcpserver.NewStreamableHTTPServer(srv)))
	t.Cleanup(hs.Close)
	pool := New(map[string]Spec{"s": {Transport: TransportHTTP, URL: hs.URL + "/mcp"}}, nil)
	t.Cleanup(func() { pool.Close() })
	pool.Start(t.Context(), nil)
	if err := pool.Err("s"); err != nil {
		t.Fatal(err)
	}
	pool.RootsChanged(t.Context(), "s")
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream was never told its roots changed")
	}
}
