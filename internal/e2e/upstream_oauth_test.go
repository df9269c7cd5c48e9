package e2e

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/internal/testop"
	"github.com/mcpwarden/mcpwarden/internal/testop/remote"
	"github.com/mcpwarden/mcpwarden/internal/tokenstore"
)

// remoteOAuthFixture is mcpwarden over HTTP in front of one remote server
// that wants OAuth ("remote", see testop/remote), with its own state
// directory and token key in env.
func remoteOAuthFixture(t *testing.T) (*fixture, *remote.Server, []string) {
	t.Helper()
	up := remote.Start(t, 0)
	f := newFixture(t, testkit.FreeAddr(t), fmt.Sprintf(`  remote:
    url: %q
    oauth: { client_id: %q, client_secret_env: REMOTE_SECRET, scopes: [offline_access] }`, up.URL, up.Client.ID),
		`  allow: ["mcp:remote:*"]`)
	key := make([]byte, tokenstore.KeySize)
	rand.Read(key)
	env := []string{
		"XDG_STATE_HOME=" + filepath.Join(f.dir, "state"),
		tokenstore.KeyEnv + "=" + base64.StdEncoding.EncodeToString(key),
		"REMOTE_SECRET=" + up.Client.Secret,
	}
	return f, up, env
}

// getenvOf reads env, a list of KEY=value.
func getenvOf(env []string) func(string) string {
	return func(k string) string {
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, k+"="); ok {
				return v
			}
		}
		return ""
	}
}

func TestServeReportsAServerThatNeedsLogin(t *testing.T) {
	t.Parallel()
	f, _, env := remoteOAuthFixture(t)
	_, stderr := startHTTP(t, f, env...)
	want := "needs `mcpwarden login remote`"
	testkit.Eventually(t, 30*time.Second, "serve to report "+want, func() bool {
		return strings.Contains(stderr.String(), want)
	})
}

func TestServeCallsAnOAuthServerWithTheStoredToken(t *testing.T) {
	t.Parallel()
	f, up, env := remoteOAuthFixture(t)
	getenv := getenvOf(env)
	tok, err := up.OP.Login(t.Context(), testop.Alice.ID, up.Client, "offline_access")
	if err != nil {
		t.Fatal(err)
	}
	key, err := tokenstore.KeyFromEnv(getenv)
	if err != nil {
		t.Fatal(err)
	}
	path, err := config.UpstreamTokenFile(getenv)
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

	url, _ := startHTTP(t, f, env...)
	c := connectHTTP(t, url)
	var names []string
	testkit.Eventually(t, 30*time.Second, "remote's tools to be listed", func() bool {
		names = toolNames(t, c)
		return slices.Contains(names, "remote__"+remote.EchoTool)
	})
	res := callTool(t, c, "remote__"+remote.EchoTool, map[string]any{"text": "through oauth"})
	if res.IsError || testkit.Text(res) != "through oauth" {
		t.Fatalf("echo = %s", testkit.Text(res))
	}
	if !up.SawToken(tok.AccessToken) {
		t.Error("the remote server never saw the stored token")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), tok.AccessToken) || strings.Contains(string(data), tok.RefreshToken) {
		t.Error("the token file holds the token in the clear")
	}
}
