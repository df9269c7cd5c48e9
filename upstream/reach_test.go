package upstream

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// capsToolEnv makes the stdio stand-in offer the caps tool (addCapsTool).
const capsToolEnv = "UPSTREAM_TEST_CAPS"

// addCapsTool gives srv a tool, caps, that answers with the client
// capabilities declared to it: those of the request on protocol
// 2026-07-28, else those of the session's initialize.
func addCapsTool(srv *mcpserver.MCPServer) {
	srv.AddTool(mcp.NewTool("caps"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var caps mcp.ClientCapabilities
		if info := mcpserver.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern && info.ClientCapabilities != nil {
			caps = *info.ClientCapabilities
		} else if s, ok := mcpserver.ClientSessionFromContext(ctx).(mcpserver.SessionWithClientInfo); ok {
			caps = s.GetClientCapabilities()
		}
		b, err := json.Marshal(caps)
		if err != nil {
			return nil, err
		}
		return mcp.NewToolResultText(string(b)), nil
	})
}

// declaredFor calls caps on server name with ctx for route (nil: a
// shared server), and returns what the
// upstream was declared.
func declaredFor(t *testing.T, ctx context.Context, pool *Pool, name string, route *Route) mcp.ClientCapabilities {
	t.Helper()
	raw, err := pool.Call(ctx, name, route, mcp.CallToolParams{Name: "caps"})
	if err != nil {
		t.Fatal(err)
	}
	var caps mcp.ClientCapabilities
	if err := json.Unmarshal([]byte(firstText(t, raw)), &caps); err != nil {
		t.Fatal(err)
	}
	return caps
}

func TestModernUpstreamIsDeclaredPerCallOnlyWhatItsCallerCanBeSent(t *testing.T) {
	t.Parallel()
	srv := newStandIn(1)
	addCapsTool(srv)
	hs := httptest.NewServer(testkit.Refusing(mcpserver.NewStreamableHTTPServer(srv, mcpserver.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20260728)), mcp.MethodInitialize))
	t.Cleanup(hs.Close)
	pool := Start(t.Context(), map[string]Spec{"s": {Transport: TransportHTTP, URL: hs.URL + "/mcp"}}, nil)
	t.Cleanup(func() { pool.Close() })
	if err := pool.Err("s"); err != nil {
		t.Fatal(err)
	}
	if got := pool.Protocol("s"); got != mcp.ProtocolVersion20260728 {
		t.Fatalf("the upstream speaks %q, want %s", got, mcp.ProtocolVersion20260728)
	}
	tests := []struct {
		name                       string
		ctx                        context.Context
		wantElicitation, wantSampl bool
	}{
		{"a call for a client that cannot be sent a request (2026-07-28)", WithReach(t.Context(), Reach{}), false, false},
		{"a call for a client that can be sent elicitation alone", WithReach(t.Context(), Reach{Elicitation: true}), true, false},
		{"a call for a client that can be sent both", WithReach(t.Context(), Reach{Elicitation: true, Sampling: true}), true, true},
		{"mcpwarden's own request, for no client", t.Context(), true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			caps := declaredFor(t, tt.ctx, pool, "s", nil)
			if got := caps.Elicitation != nil; got != tt.wantElicitation {
				t.Errorf("elicitation declared: %v, want %v", got, tt.wantElicitation)
			}
			if got := caps.Sampling != nil; got != tt.wantSampl {
				t.Errorf("sampling declared: %v, want %v", got, tt.wantSampl)
			}
			if caps.Roots == nil {
				t.Error("roots not declared: mcpwarden answers roots/list itself, for every client")
			}
		})
	}
}

func TestChildIsolatedPerSessionIsDeclaredOnlyWhatItsClientCanBeSent(t *testing.T) {
	t.Parallel()
	pool, _ := isolatedPool(t, Spec{Isolation: IsolationPerSession}, capsToolEnv+"=1")
	modern := WithReach(t.Context(), Reach{})
	if caps := declaredFor(t, modern, pool, "iso", &Route{Principal: "p", Session: "modern"}); caps.Elicitation != nil || caps.Sampling != nil {
		t.Errorf("the child of a client that cannot be sent a request was declared %+v, want neither elicitation nor sampling", caps)
	}
	legacy := WithReach(t.Context(), Reach{Elicitation: true, Sampling: true})
	if caps := declaredFor(t, legacy, pool, "iso", &Route{Principal: "p", Session: "legacy"}); caps.Elicitation == nil || caps.Sampling == nil {
		t.Errorf("the child of a client that can be sent both was declared %+v, want elicitation and sampling", caps)
	}
}
