package upstream

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/testop"
	"github.com/mcpwarden/mcpwarden/internal/testop/remote"
	"github.com/mcpwarden/mcpwarden/internal/tokenstore"
)

// An oauthUpstream is a remote server that wants OAuth (see remote).
type oauthUpstream struct{ *remote.Server }

func startOAuthUpstream(t *testing.T, lifetime time.Duration) oauthUpstream {
	return oauthUpstream{remote.Start(t, lifetime)}
}

func (u oauthUpstream) sawToken(tok string) bool { return u.SawToken(tok) }

// login signs alice in at the provider and stores her token for server.
func (u oauthUpstream) login(t *testing.T, store *tokenstore.Store, server string) tokenstore.Token {
	t.Helper()
	tok, err := u.OP.Login(t.Context(), testop.Alice.ID, u.Client, "offline_access")
	if err != nil {
		t.Fatal(err)
	}
	st := tokenstore.Token{
		AccessToken: tok.AccessToken, TokenType: tok.TokenType, RefreshToken: tok.RefreshToken,
		Expiry: tok.Expiry, Issuer: u.OP.Issuer, Resource: u.URL,
	}
	if err := store.Put(t.Context(), server, st); err != nil {
		t.Fatal(err)
	}
	return st
}

func (u oauthUpstream) spec(store *tokenstore.Store, server string) Spec {
	return Spec{Transport: TransportHTTP, URL: u.URL, InitTimeout: 10 * time.Second, OAuth: &OAuth{
		ClientID: u.Client.ID, ClientSecret: u.Client.Secret,
		Tokens: &tokenstore.ServerTokens{Store: store, Server: server, Resource: u.URL},
	}}
}

var newTokenStore = remote.NewTokenStore

func TestStoredOAuthTokenListsAndCallsTools(t *testing.T) {
	t.Parallel()
	up := startOAuthUpstream(t, 0)
	store := newTokenStore(t)
	tok := up.login(t, store, "remote")
	pool := Start(t.Context(), map[string]Spec{"remote": up.spec(store, "remote")}, nil)
	t.Cleanup(func() { pool.Close() })

	tools, err := pool.Tools("remote")
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 1 || tools[0].Name != remote.EchoTool {
		t.Errorf("listed %v, want the echo tool", tools)
	}
	res, err := pool.Call(t.Context(), "remote", nil, mcp.CallToolParams{Name: remote.EchoTool, Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := firstText(t, res); got != "hi" {
		t.Errorf("tool1 = %q", got)
	}
	if !up.sawToken(tok.AccessToken) {
		t.Error("the upstream never saw the stored token")
	}
}

func TestServerWithoutTokenReportsItNeedsLogin(t *testing.T) {
	t.Parallel()
	up := startOAuthUpstream(t, 0)
	pool := Start(t.Context(), map[string]Spec{"remote": up.spec(newTokenStore(t), "remote")}, nil)
	t.Cleanup(func() { pool.Close() })

	err := pool.Err("remote")
	if !errors.Is(err, ErrLoginRequired) {
		t.Fatalf("Err = %v, want ErrLoginRequired", err)
	}
	if want := "`mcpwarden login remote`"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say to run %s", err, want)
	}
}

func TestTokenIsNotSentToAServerWhoseURLChanged(t *testing.T) {
	t.Parallel()
	up := startOAuthUpstream(t, 0)
	store := newTokenStore(t)
	tok := up.login(t, store, "remote")
	// The config now points "remote" at another server (an edit, or an
	// attacker's): the token, issued for the first URL, must not go there.
	evil := startOAuthUpstream(t, 0)
	spec := evil.spec(store, "remote")
	pool := Start(t.Context(), map[string]Spec{"remote": spec}, nil)
	t.Cleanup(func() { pool.Close() })

	if err := pool.Err("remote"); !errors.Is(err, ErrLoginRequired) {
		t.Fatalf("Err = %v, want ErrLoginRequired", err)
	}
	if evil.sawToken(tok.AccessToken) {
		t.Error("the token for one server's URL was sent to another")
	}
}

func TestTokenAboutToExpireIsRefreshedFirst(t *testing.T) {
	t.Parallel()
	// Tokens live less than RefreshAhead: the stored one is refreshed
	// before its first use, and the upstream only sees the new one.
	up := startOAuthUpstream(t, tokenstore.RefreshAhead/2)
	store := newTokenStore(t)
	old := up.login(t, store, "remote")
	if old.RefreshToken == "" {
		t.Fatal("the provider issued no refresh token")
	}
	pool := Start(t.Context(), map[string]Spec{"remote": up.spec(store, "remote")}, nil)
	t.Cleanup(func() { pool.Close() })

	if _, err := pool.Call(t.Context(), "remote", nil, mcp.CallToolParams{Name: remote.EchoTool, Arguments: map[string]any{"text": "x"}}); err != nil {
		t.Fatal(err)
	}
	now, _, err := store.Get(t.Context(), "remote")
	if err != nil {
		t.Fatal(err)
	}
	if now.AccessToken == old.AccessToken || now.RefreshToken == old.RefreshToken {
		t.Fatal("the stored token was not refreshed (or its refresh token not rotated)")
	}
	if now.Issuer != old.Issuer || now.Resource != old.Resource {
		t.Errorf("refreshed token is for %q at %q, want %q at %q", now.Resource, now.Issuer, old.Resource, old.Issuer)
	}
	if up.sawToken(old.AccessToken) {
		t.Error("the token about to expire was sent")
	}
	if !up.sawToken(now.AccessToken) {
		t.Error("the refreshed token was never sent")
	}
}

func TestExpiredTokenIsRefreshed(t *testing.T) {
	t.Parallel()
	up := startOAuthUpstream(t, 0)
	store := newTokenStore(t)
	old := up.login(t, store, "remote")
	old.Expiry = time.Now().Add(-time.Hour) // as the store has it: long expired
	if err := store.Put(t.Context(), "remote", old); err != nil {
		t.Fatal(err)
	}
	pool := Start(t.Context(), map[string]Spec{"remote": up.spec(store, "remote")}, nil)
	t.Cleanup(func() { pool.Close() })
	if err := pool.Err("remote"); err != nil {
		t.Fatal(err)
	}
	now, _, _ := store.Get(t.Context(), "remote")
	if now.AccessToken == old.AccessToken || time.Until(now.Expiry) < 30*time.Minute {
		t.Errorf("stored token not replaced by a fresh one: expiry %v", now.Expiry)
	}
}

func TestSpentRefreshTokenMeansLogin(t *testing.T) {
	t.Parallel()
	up := startOAuthUpstream(t, 0)
	store := newTokenStore(t)
	old := up.login(t, store, "remote")
	// Spend the refresh token elsewhere (a copy of the file used by
	// another instance, say): the provider rotates it, so ours is dead.
	spent := old
	spent.Expiry = time.Now().Add(-time.Hour)
	other := newTokenStore(t)
	if err := other.Put(t.Context(), "remote", spent); err != nil {
		t.Fatal(err)
	}
	first := Start(t.Context(), map[string]Spec{"remote": up.spec(other, "remote")}, nil)
	t.Cleanup(func() { first.Close() })
	if err := first.Err("remote"); err != nil {
		t.Fatal(err)
	}
	if err := store.Put(t.Context(), "remote", spent); err != nil {
		t.Fatal(err)
	}
	pool := Start(t.Context(), map[string]Spec{"remote": up.spec(store, "remote")}, nil)
	t.Cleanup(func() { pool.Close() })
	if err := pool.Err("remote"); !errors.Is(err, ErrLoginRequired) {
		t.Fatalf("Err = %v, want ErrLoginRequired", err)
	}
}

func TestReloadKeepsAnOAuthServerWhoseSpecIsUnchanged(t *testing.T) {
	t.Parallel()
	up := startOAuthUpstream(t, 0)
	store := newTokenStore(t)
	up.login(t, store, "remote")
	pool := Start(t.Context(), map[string]Spec{"remote": up.spec(store, "remote")}, nil)
	t.Cleanup(func() { pool.Close() })
	if err := pool.Err("remote"); err != nil {
		t.Fatal(err)
	}
	// A reload builds a new token store for the same server: no restart.
	again := up.spec(newTokenStore(t), "remote")
	if _, _, restarted := pool.Reconcile(t.Context(), map[string]Spec{"remote": again}); len(restarted) != 0 {
		t.Errorf("an unchanged OAuth server was restarted by a reload")
	}
	other := up.spec(store, "remote")
	other.OAuth.Scopes = []string{"more"}
	if _, _, restarted := pool.Reconcile(t.Context(), map[string]Spec{"remote": other}); len(restarted) != 1 {
		t.Errorf("a server whose scopes changed was not restarted")
	}
}
