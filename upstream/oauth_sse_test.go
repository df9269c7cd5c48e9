package upstream

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/testop/remote"
	"github.com/mcpwarden/mcpwarden/internal/tokenstore"
)

func sseSpec(u oauthUpstream, store *tokenstore.Store) Spec {
	s := u.spec(store, "remote")
	s.Transport = TransportSSE
	return s
}

func TestSSEServerGetsTheStoredOAuthToken(t *testing.T) {
	t.Parallel()
	up := oauthUpstream{remote.StartSSE(t, 0)}
	store := newTokenStore(t)
	tok := up.login(t, store, "remote")
	pool := Start(t.Context(), map[string]Spec{"remote": sseSpec(up, store)}, nil)
	t.Cleanup(func() { pool.Close() })
	if err := pool.Err("remote"); err != nil {
		t.Fatalf("Err = %v", err)
	}
	res, err := pool.Call(t.Context(), "remote", nil, mcp.CallToolParams{Name: remote.EchoTool, Arguments: map[string]any{"text": "over sse"}})
	if err != nil || !strings.Contains(string(res), "over sse") {
		t.Fatalf("Call = %s, %v", res, err)
	}
	if !up.sawToken(tok.AccessToken) {
		t.Error("the SSE server never saw the stored token")
	}
}

func TestSSEServerWithoutTokenReportsItNeedsLogin(t *testing.T) {
	t.Parallel()
	up := oauthUpstream{remote.StartSSE(t, 0)}
	s := sseSpec(up, newTokenStore(t))
	s.InitTimeout = 5 * time.Second
	pool := Start(t.Context(), map[string]Spec{"remote": s}, nil)
	t.Cleanup(func() { pool.Close() })
	if err := pool.Err("remote"); !errors.Is(err, ErrLoginRequired) {
		t.Fatalf("Err = %v, want ErrLoginRequired", err)
	}
}
