// Package testop is an OpenID provider for tests: zitadel/oidc's certified
// op package over an in-memory storage, served by an httptest.Server. It
// has two users in different groups (alice in "eng", bob in "ops"), test
// clients whose access tokens are JWTs or opaque, signing keys that can be
// rotated, and Token, which obtains a real access token for a user through
// the authorization code flow with PKCE, driven by an http.Client and a
// login page that signs in whoever it is told to. A request with the
// offline_access scope also gets a refresh token, rotated on each use. No
// token is minted by hand. It is for tests only; no non-test code imports it.
package testop

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/oauth2"
)

// The users every provider has.
var (
	Alice = User{ID: "alice", Email: "alice@corp.example", EmailVerified: true, Groups: []string{"eng"}}
	Bob   = User{ID: "bob", Email: "bob@corp.example", EmailVerified: true, Groups: []string{"ops"}}
)

// Resource is the audience of ClientJWT's and ClientOpaque's tokens: the
// mcpwarden under test. OtherResource is that of ClientOther's.
const (
	Resource      = "https://mcpwarden.test/mcp"
	OtherResource = "https://other.test/mcp"
)

// The clients every provider has. ClientIntrospector is the resource
// server's own client, which it authenticates as at the introspection
// endpoint.
var (
	ClientJWT          = Client{ID: "mcp-client", Secret: "mcp-client-secret", Audience: []string{Resource}}
	ClientOpaque       = Client{ID: "mcp-opaque", Secret: "mcp-opaque-secret", Audience: []string{Resource}, Opaque: true}
	ClientOther        = Client{ID: "other-client", Secret: "other-client-secret", Audience: []string{OtherResource}}
	ClientIntrospector = Client{ID: "mcpwarden", Secret: "mcpwarden-secret", Audience: []string{Resource}}
)

// Options configures a provider. The zero value gives access tokens an
// hour of life.
type Options struct {
	// Lifetime is how long access tokens live; 0 means an hour.
	Lifetime time.Duration
	// Users and Clients are added to the built-in ones.
	Users   []User
	Clients []Client
}

// A Provider is a running OpenID provider. Its Issuer is the server's URL.
type Provider struct {
	Issuer  string
	server  *httptest.Server
	store   *storage
	handler *op.Provider
}

// The test login page: the op sends the browser to it with the
// authorization request's ID; Token adds the user to sign in.
const (
	loginPath      = "/login"
	loginIDParam   = "id"
	loginUserParam = "user"
)

// Start runs a provider until the test ends.
func Start(t testing.TB, opts *Options) *Provider {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	s := &storage{
		users:    map[string]User{},
		clients:  map[string]Client{},
		lifetime: opts.Lifetime,
		requests: map[string]*authRequest{},
		codes:    map[string]string{},
		tokens:   map[string]token{},
		refresh:  map[string]*refreshToken{},
	}
	if s.lifetime == 0 {
		s.lifetime = time.Hour
	}
	for _, u := range append([]User{Alice, Bob}, opts.Users...) {
		s.users[u.ID] = u
	}
	for _, c := range append([]Client{ClientJWT, ClientOpaque, ClientOther, ClientIntrospector}, opts.Clients...) {
		s.clients[c.ID] = c
	}
	if err := s.rotate(false); err != nil {
		t.Fatal(err)
	}
	p := &Provider{store: s}
	mux := http.NewServeMux()
	p.server = httptest.NewServer(mux)
	t.Cleanup(p.server.Close)
	p.Issuer = p.server.URL

	cfg := &op.Config{
		CryptoKey:      sha256.Sum256([]byte(newID())), // encrypts opaque tokens and codes
		CodeMethodS256: true,
		// Refresh tokens for requests with offline_access, rotated on use.
		GrantTypeRefreshToken: true,
	}
	handler, err := op.NewProvider(cfg, s, op.StaticIssuer(p.Issuer), op.WithAllowInsecure())
	if err != nil {
		t.Fatalf("starting the test OpenID provider: %v", err)
	}
	p.handler = handler
	interceptor := op.NewIssuerInterceptor(handler.IssuerFromRequest)
	mux.Handle(loginPath, interceptor.HandlerFunc(p.login))
	mux.Handle("/", handler)
	return p
}

// login signs in the user named in the request and sends the browser back
// to the op: the test stand-in for a login form.
func (p *Provider) login(w http.ResponseWriter, r *http.Request) {
	id := r.FormValue(loginIDParam)
	if err := p.store.setUser(id, r.FormValue(loginUserParam)); err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	http.Redirect(w, r, op.AuthCallbackURL(p.handler)(r.Context(), id), http.StatusFound)
}

// RotateKey makes a new key the signing key. The old keys stay in the
// JWKS, so tokens they signed still verify, unless retire is set.
func (p *Provider) RotateKey(retire bool) error { return p.store.rotate(retire) }

// IntrospectionURL is the provider's RFC 7662 introspection endpoint.
func (p *Provider) IntrospectionURL() string {
	return p.handler.IntrospectionEndpoint().Absolute(p.Issuer)
}

// Token signs user in through client with the authorization code flow and
// PKCE and returns the access token the token endpoint issues, as a
// client of mcpwarden would get it. scopes are requested besides openid.
func (p *Provider) Token(ctx context.Context, user string, client Client, scopes ...string) (string, error) {
	tok, err := p.Login(ctx, user, client, scopes...)
	if err != nil {
		return "", err
	}
	return tok.AccessToken, nil
}

// Login is Token, returning the token endpoint's whole answer (the ID
// token is its Extra("id_token")).
func (p *Provider) Login(ctx context.Context, user string, client Client, scopes ...string) (*oauth2.Token, error) {
	cfg := oauth2.Config{
		ClientID:     client.ID,
		ClientSecret: client.Secret,
		RedirectURL:  RedirectURI,
		Scopes:       append([]string{"openid"}, scopes...),
		Endpoint: oauth2.Endpoint{
			AuthURL:   p.handler.AuthorizationEndpoint().Absolute(p.Issuer),
			TokenURL:  p.handler.TokenEndpoint().Absolute(p.Issuer),
			AuthStyle: oauth2.AuthStyleInHeader,
		},
	}
	verifier, state := oauth2.GenerateVerifier(), newID()
	code, err := p.authorize(ctx, cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier)), user, state)
	if err != nil {
		return nil, fmt.Errorf("signing %q in through %q: %w", user, client.ID, err)
	}
	tok, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		return nil, fmt.Errorf("exchanging the code of %q: %w", user, err)
	}
	return tok, nil
}

// authorize follows the redirects of an authorization request as a
// browser would, signing user in at the login page, and returns the code
// the op redirects back with.
func (p *Provider) authorize(ctx context.Context, next, user, state string) (string, error) {
	back, err := p.follow(ctx, next, user, func(u string) bool { return strings.HasPrefix(u, RedirectURI) })
	if err != nil {
		return "", err
	}
	u, err := url.Parse(back)
	if err != nil {
		return "", err
	}
	q := u.Query()
	if e := q.Get("error"); e != "" {
		return "", fmt.Errorf("authorization refused: %s: %s", e, q.Get("error_description"))
	}
	if q.Get("state") != state {
		return "", errors.New("redirect carries the wrong state")
	}
	return q.Get("code"), nil
}

// Browse does what a browser does with an authorization URL a client
// prints: it follows the provider's redirects, signing user in at the
// login page, and then loads the page the provider sends it back to (the
// client's redirect URI, where the client takes the code). It returns an
// error if that page does not answer 200.
func (p *Provider) Browse(ctx context.Context, authURL, user string) error {
	back, err := p.follow(ctx, authURL, user, func(u string) bool { return !strings.HasPrefix(u, p.Issuer+"/") })
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, back, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the redirect URI %s answered %s", back, resp.Status)
	}
	return nil
}

// follow follows redirects from next as a browser would, signing user in
// at the login page, until it comes to a URL for which done is true, and
// returns it.
func (p *Provider) follow(ctx context.Context, next, user string, done func(string) bool) (string, error) {
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for range 10 {
		if done(next) {
			return next, nil
		}
		u, err := url.Parse(next)
		if err != nil {
			return "", err
		}
		if u.Path == loginPath {
			q := u.Query()
			q.Set(loginUserParam, user)
			u.RawQuery = q.Encode()
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return "", err
		}
		resp, err := c.Do(req)
		if err != nil {
			return "", err
		}
		resp.Body.Close()
		loc, err := resp.Location()
		if err != nil {
			return "", fmt.Errorf("%s answered %s without a redirect", u.Path, resp.Status)
		}
		next = loc.String()
	}
	return "", errors.New("too many redirects")
}

// KeysURL is the provider's JWKS endpoint.
func (p *Provider) KeysURL() string { return p.handler.KeysEndpoint().Absolute(p.Issuer) }
