package proxy

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// declaringEnv is a proxy, served over streamable HTTP at the returned
// URL, in front of "up", an upstream of 2026-07-28 alone whose tool caps
// answers with the client capabilities the call declared to it.
func declaringEnv(t *testing.T) (*Server, string) {
	t.Helper()
	up := server.NewMCPServer("declared", "1.0", server.WithToolCapabilities(false))
	up.AddTool(mcp.NewTool("caps"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var caps mcp.ClientCapabilities
		if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.ClientCapabilities != nil {
			caps = *info.ClientCapabilities
		}
		b, err := json.Marshal(caps)
		return mcp.NewToolResultText(string(b)), err
	})
	hs := httptest.NewServer(testkit.Refusing(server.NewStreamableHTTPServer(up), mcp.MethodInitialize))
	t.Cleanup(hs.Close)
	srv, pool, _ := proxyFor(t, upstream.Spec{Transport: upstream.TransportHTTP, URL: hs.URL + "/mcp"}, allowAll)
	if got := pool.Protocol("up"); got != mcp.ProtocolVersion20260728 {
		t.Fatalf("the upstream speaks %q, want %s", got, mcp.ProtocolVersion20260728)
	}
	return srv, serveHTTP(t, srv)
}

// declaredThrough calls up__caps through c and returns what the upstream
// was declared.
func declaredThrough(t *testing.T, c *client.Client) mcp.ClientCapabilities {
	t.Helper()
	res := testkit.CallTool(t, c, "up__caps", nil)
	var caps mcp.ClientCapabilities
	if err := json.Unmarshal([]byte(testkit.Text(res)), &caps); err != nil {
		t.Fatalf("caps answered %q: %v", testkit.Text(res), err)
	}
	return caps
}

func TestUpstreamIsDeclaredWhatAModernClientDeclared(t *testing.T) {
	t.Parallel()
	_, url := declaringEnv(t)
	// A 2026-07-28 client takes no request within a call, but an
	// upstream's request is relayed to it through its multi round-trip
	// flow (inputRelay): the upstream may count on what the client declared.
	tests := []struct {
		name            string
		opts            []client.ClientOption
		wantElicitation bool
		wantSampling    bool
	}{
		{"a client that declares both", []client.ClientOption{client.WithElicitationHandler(&human{}), client.WithSamplingHandler(refusingSampler{})}, true, true},
		{"a client that declares elicitation alone", []client.ClientOption{client.WithElicitationHandler(&human{})}, true, false},
		{"a client that declares neither", nil, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			caps := declaredThrough(t, modernClient(t, url, tt.opts...))
			if got := caps.Elicitation != nil; got != tt.wantElicitation {
				t.Errorf("elicitation declared: %v, want %v", got, tt.wantElicitation)
			}
			if got := caps.Sampling != nil; got != tt.wantSampling {
				t.Errorf("sampling declared: %v, want %v", got, tt.wantSampling)
			}
			if caps.Roots == nil {
				t.Error("roots were not declared: mcpwarden answers roots/list itself")
			}
		})
	}
}

func TestUpstreamIsDeclaredWhatAHandshakeClientCanBeSent(t *testing.T) {
	t.Parallel()
	srv, _ := declaringEnv(t)
	tests := []struct {
		name            string
		opts            []client.ClientOption
		wantElicitation bool
		wantSampling    bool
	}{
		{"a client that declares elicitation alone", []client.ClientOption{client.WithElicitationHandler(&human{})}, true, false},
		{"a client that declares both", []client.ClientOption{client.WithElicitationHandler(&human{}), client.WithSamplingHandler(refusingSampler{})}, true, true},
		{"a client that declares neither", nil, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := testkit.Connect(t, srv.MCP(), "2025-11-25", append(tt.opts, client.WithLegacyProtocolOnly())...)
			caps := declaredThrough(t, c)
			if got := caps.Elicitation != nil; got != tt.wantElicitation {
				t.Errorf("elicitation declared: %v, want %v", got, tt.wantElicitation)
			}
			if got := caps.Sampling != nil; got != tt.wantSampling {
				t.Errorf("sampling declared: %v, want %v", got, tt.wantSampling)
			}
		})
	}
}

// A refusingSampler is a client's sampling handler that declines.
type refusingSampler struct{}

func (refusingSampler) CreateMessage(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return nil, context.Canceled
}
