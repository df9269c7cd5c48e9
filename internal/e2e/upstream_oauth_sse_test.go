package e2e

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/internal/testop"
	"github.com/mcpwarden/mcpwarden/internal/testop/remote"
	"github.com/mcpwarden/mcpwarden/internal/tokenstore"
)

func TestServeCallsAnOAuthSSEServerWithTheStoredToken(t *testing.T) {
	t.Parallel()
	up := remote.StartSSE(t, 0)
	f := newFixture(t, testkit.FreeAddr(t), fmt.Sprintf(`  remote:
    url: %q
    transport: sse
    oauth: { client_id: %q, client_secret_env: REMOTE_SECRET, scopes: [offline_access] }`, up.URL, up.Client.ID),
		`  allow: ["mcp:remote:*"]`)
	key := make([]byte, tokenstore.KeySize)
	rand.Read(key)
	env := []string{
		"XDG_STATE_HOME=" + filepath.Join(f.dir, "state"),
		tokenstore.KeyEnv + "=" + base64.StdEncoding.EncodeToString(key),
		"REMOTE_SECRET=" + up.Client.Secret,
	}
	tok, err := up.OP.Login(t.Context(), testop.Alice.ID, up.Client, "offline_access")
	if err != nil {
		t.Fatal(err)
	}
	path, err := config.UpstreamTokenFile(getenvOf(env))
	if err != nil {
		t.Fatal(err)
	}
	store, err := tokenstore.Open(path, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put(t.Context(), "remote", tokenstore.Token{
		AccessToken: tok.AccessToken, TokenType: tok.TokenType, RefreshToken: tok.RefreshToken,
		Expiry: tok.Expiry, Issuer: up.OP.Issuer, Resource: up.URL,
	}); err != nil {
		t.Fatal(err)
	}
	serveAndEcho(t, f, env, "through oauth over sse")
	if !up.SawToken(tok.AccessToken) {
		t.Error("the SSE server never saw the stored token")
	}
}
