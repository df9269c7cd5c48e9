package oauthlogin

import (
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/testop/remote"
	"github.com/mcpwarden/mcpwarden/internal/tokenstore"
	"github.com/mcpwarden/mcpwarden/upstream"
)

func clientCredentials(up *remote.Server, store *tokenstore.Store, secret string) *ClientCredentials {
	return &ClientCredentials{
		Tokens:   &tokenstore.ServerTokens{Store: store, Server: "remote", Resource: up.URL},
		ClientID: up.Client.ID, ClientSecret: secret,
	}
}

func TestClientCredentialsTokenIsObtainedStoredAndReused(t *testing.T) {
	t.Parallel()
	up := remote.Start(t, 0)
	store := newStore(t)
	cc := clientCredentials(up, store, up.Client.Secret)
	pool := upstream.Start(t.Context(), map[string]upstream.Spec{"remote": {
		Transport: upstream.TransportHTTP, URL: up.URL,
		OAuth: &upstream.OAuth{ClientID: up.Client.ID, ClientSecret: up.Client.Secret, Tokens: cc},
	}}, nil)
	t.Cleanup(func() { pool.Close() })
	if _, err := pool.Call(t.Context(), "remote", nil, mcp.CallToolParams{Name: remote.EchoTool, Arguments: map[string]any{"text": "x"}}); err != nil {
		t.Fatal(err)
	}
	first, ok, err := store.Get(t.Context(), "remote")
	if err != nil || !ok {
		t.Fatalf("no token stored: %v", err)
	}
	if first.Issuer != up.OP.Issuer || first.Resource != up.URL || !up.SawToken(first.AccessToken) {
		t.Errorf("stored %+v, want the token the server saw, for its URL, from its issuer", first)
	}
	again, err := cc.GetToken(t.Context())
	if err != nil || again.AccessToken != first.AccessToken {
		t.Errorf("GetToken = %v, %v: want the stored token again, not a new one", again, err)
	}
}

func TestClientCredentialsTokenAboutToExpireIsReplaced(t *testing.T) {
	t.Parallel()
	up := remote.Start(t, 0)
	store := newStore(t)
	cc := clientCredentials(up, store, up.Client.Secret)
	first, err := cc.GetToken(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	tok, _, _ := store.Get(t.Context(), "remote")
	tok.Expiry = time.Now().Add(tokenstore.RefreshAhead / 2)
	if err := store.Put(t.Context(), "remote", tok); err != nil {
		t.Fatal(err)
	}
	second, err := cc.GetToken(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if second.AccessToken == first.AccessToken {
		t.Error("a token about to expire was handed out again")
	}
}

func TestWrongClientSecretGetsNoToken(t *testing.T) {
	t.Parallel()
	up := remote.Start(t, 0)
	store := newStore(t)
	if _, err := clientCredentials(up, store, "wrong").GetToken(t.Context()); err == nil {
		t.Fatal("a wrong secret got a token")
	}
	if _, ok, _ := store.Get(t.Context(), "remote"); ok {
		t.Error("a token was stored")
	}
}
