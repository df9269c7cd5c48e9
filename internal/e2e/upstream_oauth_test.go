package e2e

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
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
	return remoteOAuthFixtureWith(t, "scopes: [offline_access]")
}

// remoteOAuthFixtureWith is remoteOAuthFixture with more keys in the
// server's oauth block.
func remoteOAuthFixtureWith(t *testing.T, oauthKeys string) (*fixture, *remote.Server, []string) {
	t.Helper()
	up := remote.Start(t, 0)
	f := newFixture(t, testkit.FreeAddr(t), fmt.Sprintf(`  remote:
    url: %q
    oauth: { client_id: %q, client_secret_env: REMOTE_SECRET, %s }`, up.URL, up.Client.ID, oauthKeys),
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

// serveAndEcho starts mcpwarden serve with env, waits for remote's tool
// and calls it with text.
func serveAndEcho(t *testing.T, f *fixture, env []string, text string) {
	t.Helper()
	url, _ := startHTTP(t, f, env...)
	c := connectHTTP(t, url)
	testkit.Eventually(t, 30*time.Second, "remote's tools to be listed", func() bool {
		return slices.Contains(toolNames(t, c), "remote__"+remote.EchoTool)
	})
	if res := callTool(t, c, "remote__"+remote.EchoTool, map[string]any{"text": text}); res.IsError || testkit.Text(res) != text {
		t.Fatalf("echo = %s", testkit.Text(res))
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

	serveAndEcho(t, f, env, "through oauth")
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

func TestLoginCompletedHeadlesslyThenServeCallsTheServer(t *testing.T) {
	t.Parallel()
	f, up, env := remoteOAuthFixture(t)
	cmd := exec.CommandContext(t.Context(), binary, "login", "--config", f.config, "remote")
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr testkit.LockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	lines := bufio.NewScanner(stdout)
	var authURL string
	for authURL == "" && lines.Scan() {
		out.WriteString(lines.Text() + "\n")
		if u, ok := strings.CutPrefix(strings.TrimSpace(lines.Text()), up.OP.Issuer); ok {
			authURL = up.OP.Issuer + u
		}
	}
	if authURL == "" {
		cmd.Wait()
		t.Fatalf("login printed no authorization URL:\n%s\n%s", out.String(), stderr.String())
	}
	if err := up.OP.Browse(t.Context(), authURL, testop.Alice.ID); err != nil {
		t.Fatal(err)
	}
	for lines.Scan() {
		out.WriteString(lines.Text() + "\n")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("login: %v\n%s\n%s", err, out.String(), stderr.String())
	}
	if !strings.Contains(out.String(), "Signed in to remote") || !strings.Contains(out.String(), "key from the environment ("+tokenstore.KeyEnv+")") {
		t.Errorf("login said (want it signed in, naming where the key came from):\n%s", out.String())
	}

	serveAndEcho(t, f, env, "after login")
}

func TestLoginWithoutTokenKeyNamesTheVariable(t *testing.T) {
	t.Parallel()
	f, _, env := remoteOAuthFixture(t)
	cmd := exec.CommandContext(t.Context(), binary, "login", "--config", f.config, "remote")
	cmd.Env = append(os.Environ(), slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, tokenstore.KeyEnv+"=") })...)
	cmd.Env = append(cmd.Env, tokenstore.KeyEnv+"=")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), tokenstore.KeyEnv) {
		t.Fatalf("login without a key: %v\n%s", err, out)
	}
}

func TestServeGetsAClientCredentialsTokenWithoutLogin(t *testing.T) {
	t.Parallel()
	f, _, env := remoteOAuthFixtureWith(t, "grant: client_credentials")
	serveAndEcho(t, f, env, "unattended")
	path, err := config.UpstreamTokenFile(getenvOf(env))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("no token stored: %v", err)
	}
}
