package oauthlogin

import (
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/testop"
	"github.com/mcpwarden/mcpwarden/internal/testop/remote"
	"github.com/mcpwarden/mcpwarden/internal/tokenstore"
	"github.com/mcpwarden/mcpwarden/upstream"
)

func TestLoginToAnSSEServerGivesATokenItTakes(t *testing.T) {
	t.Parallel()
	up := remote.StartSSE(t, 0)
	store := newStore(t)
	tok, _, err := Login(t.Context(), request(up, store, func(u string) error {
		return up.OP.Browse(t.Context(), u, testop.Alice.ID)
	}))
	if err != nil {
		t.Fatal(err)
	}
	pool := upstream.Start(t.Context(), map[string]upstream.Spec{"remote": {
		Transport: upstream.TransportSSE, URL: up.URL, OAuth: &upstream.OAuth{
			ClientID: up.Client.ID, ClientSecret: up.Client.Secret,
			Tokens: &tokenstore.ServerTokens{Store: store, Server: "remote", Resource: up.URL},
		},
	}}, nil)
	t.Cleanup(func() { pool.Close() })
	res, err := pool.Call(t.Context(), "remote", nil, mcp.CallToolParams{Name: remote.EchoTool, Arguments: map[string]any{"text": "x-sse"}})
	if err != nil || !strings.Contains(string(res), "x-sse") {
		t.Fatalf("calling over SSE with the token login stored: %s, %v", res, err)
	}
	if !up.SawToken(tok.AccessToken) {
		t.Error("the SSE server never saw the token login stored")
	}
}
