package oauthlogin

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/oauth"
	"github.com/mcpwarden/mcpwarden/internal/testop"
	"github.com/mcpwarden/mcpwarden/internal/testop/remote"
	"github.com/mcpwarden/mcpwarden/internal/tokenstore"
	"github.com/mcpwarden/mcpwarden/upstream"
)

var newStore = remote.NewTokenStore

func request(up *remote.Server, store *tokenstore.Store, show func(string) error) Request {
	return Request{
		Server: "remote", URL: up.URL, ClientID: up.Client.ID, ClientSecret: up.Client.Secret,
		Scopes: []string{"openid", "offline_access"}, Store: store, Show: show,
	}
}

func TestLoginCompletedHeadlesslyStoresAWorkingToken(t *testing.T) {
	t.Parallel()
	up := remote.Start(t, 0)
	store := newStore(t)
	var shown string
	tok, _, err := Login(t.Context(), request(up, store, func(u string) error {
		shown = u
		return up.OP.Browse(t.Context(), u, testop.Alice.ID)
	}))
	if err != nil {
		t.Fatal(err)
	}
	q := mustQuery(t, shown)
	if q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256" {
		t.Errorf("authorization URL %s has no PKCE challenge", shown)
	}
	if q.Get("resource") != up.URL {
		t.Errorf("authorization URL asks for resource %q, want the server's URL %q", q.Get("resource"), up.URL)
	}
	if tok.AccessToken == "" || tok.RefreshToken == "" || tok.Issuer != up.OP.Issuer || tok.Resource != up.URL {
		t.Fatalf("stored token %+v: want access and refresh tokens, for the server's URL, from its issuer", tok)
	}
	data, err := os.ReadFile(store.Path())
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte(tok.AccessToken)) || bytes.Contains(data, []byte(tok.RefreshToken)) {
		t.Error("the token file holds the token in the clear")
	}

	pool := upstream.Start(t.Context(), map[string]upstream.Spec{"remote": {
		Transport: upstream.TransportHTTP, URL: up.URL, OAuth: &upstream.OAuth{
			ClientID: up.Client.ID, ClientSecret: up.Client.Secret,
			Tokens: &tokenstore.ServerTokens{Store: store, Server: "remote", Resource: up.URL},
		},
	}}, nil)
	t.Cleanup(func() { pool.Close() })
	if _, err := pool.Call(t.Context(), "remote", nil, mcp.CallToolParams{Name: remote.EchoTool, Arguments: map[string]any{"text": "x"}}); err != nil {
		t.Fatalf("calling with the token login stored: %v", err)
	}
	if !up.SawToken(tok.AccessToken) {
		t.Error("the server never saw the token login stored")
	}
}

func TestForgedRedirectDoesNotCompleteLogin(t *testing.T) {
	t.Parallel()
	up := remote.Start(t, 0)
	store := newStore(t)
	// An attacker's page sends the browser to the loopback listener with
	// a code of its own and a state it guessed (login CSRF).
	_, _, err := Login(t.Context(), request(up, store, func(u string) error {
		redirect := mustQuery(t, u).Get("redirect_uri")
		resp, err := http.Get(redirect + "?code=attacker-code&state=guessed")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}))
	if !errors.Is(err, transport.ErrInvalidState) {
		t.Fatalf("Login = %v, want ErrInvalidState", err)
	}
	if _, ok, _ := store.Get(t.Context(), "remote"); ok {
		t.Error("a token was stored from a forged redirect")
	}
}

func TestRefusedSignInIsReported(t *testing.T) {
	t.Parallel()
	up := remote.Start(t, 0)
	_, _, err := Login(t.Context(), request(up, newStore(t), func(u string) error {
		return up.OP.Browse(t.Context(), u, "mallory") // no such user
	}))
	if err == nil {
		t.Fatal("a sign-in of an unknown user stored a token")
	}
}

func TestLoginGivesUpWhenTheContextEnds(t *testing.T) {
	t.Parallel()
	up := remote.Start(t, 0)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, _, err := Login(ctx, request(up, newStore(t), func(string) error { return nil })) // nobody opens it
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Login = %v, want DeadlineExceeded", err)
	}
}

func mustQuery(t *testing.T, raw string) url.Values {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query()
}

func TestServerClaimingAnotherResourceGetsNoTokenForIt(t *testing.T) {
	t.Parallel()
	victim := remote.Start(t, 0)
	// The evil server's 401 points at metadata that names the victim as
	// its resource, so that a token for the victim would be minted and
	// sent to the evil server (RFC 9728 §7.3).
	mux := http.NewServeMux()
	evil := httptest.NewServer(mux)
	t.Cleanup(evil.Close)
	mdURL, err := oauth.MetadataURL(evil.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle(mustPath(t, mdURL), oauth.MetadataHandler(oauth.Metadata{
		Resource: victim.URL, AuthorizationServers: []string{victim.OP.Issuer}, BearerMethodsSupported: []string{"header"},
	}))
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+mdURL+`"`)
		w.WriteHeader(http.StatusUnauthorized)
	})
	store := newStore(t)
	r := request(victim, store, func(u string) error {
		return victim.OP.Browse(t.Context(), u, testop.Alice.ID)
	})
	r.URL = evil.URL + "/mcp"
	tok, _, err := Login(t.Context(), r)
	t.Logf("login: %v", err)
	if err == nil {
		t.Fatalf("login to a server claiming another's resource stored %+v", tok)
	}
	if _, ok, _ := store.Get(t.Context(), "remote"); ok {
		t.Error("a token was stored")
	}
}

func mustPath(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Path
}
