// Package oauthlogin obtains the tokens mcpwarden holds as an OAuth
// client of remote MCP servers. Login signs a person in once
// (`mcpwarden login <server>`): the authorization code flow with PKCE and
// the RFC 8707 resource, its redirect taken by a listener on the loopback
// interface (RFC 8252 §7.3); discovery and the token exchange are
// mcp-go's. ClientCredentials gets tokens as the client itself, for
// unattended deployments. Tokens go to the encrypted token store.
// UpstreamOAuth turns a server's oauth block into the upstream.OAuth its
// session uses.
package oauthlogin

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/mcpwarden/mcpwarden/internal/tokenstore"
)

// CallbackPath is the path of the loopback redirect URI.
const CallbackPath = "/callback"

// A Request says whom to sign in to and where to keep the token.
type Request struct {
	// Server is the server's name in the config; URL its MCP endpoint,
	// for which the token is asked (the resource).
	Server string
	URL    string
	// ClientID and ClientSecret ("" for a public client) are the
	// pre-registered client of the server's oauth block, if it names one.
	// ClientMetadataURL is its client ID metadata document, used when the
	// authorization server says it takes them. With neither (or when the
	// server does not take the document), the client registered earlier
	// is reused, or one is registered (RFC 7591) and kept in the store.
	ClientID          string
	ClientSecret      string
	ClientMetadataURL string
	// Scopes are those of the server's oauth block; when there are none,
	// the scope the server's challenge asks for is requested, else every
	// scope its resource metadata lists, else none.
	Scopes []string
	Store  *tokenstore.Store
	// Show is given the authorization URL the person has to open: it
	// prints it, and may open a browser on it.
	Show func(authURL string) error
	// HTTPClient makes the discovery and token requests; nil means one
	// with a 30 s timeout.
	HTTPClient *http.Client
}

// A Client says which client a login used, for the person to see.
type Client struct {
	ID string
	// How is how mcpwarden came by it.
	How ClientOrigin
}

// A ClientOrigin says where the client of a login came from.
type ClientOrigin uint8

// ClientOrigin values.
const (
	ClientConfigured        ClientOrigin = iota // client_id in the config
	ClientMetadataDocument                      // client_metadata_url, taken by the server
	ClientRegisteredEarlier                     // a registration in the token store
	ClientRegisteredNow                         // registered by this login (RFC 7591)
)

// String names the origin for `mcpwarden login`'s output.
func (o ClientOrigin) String() string {
	switch o {
	case ClientConfigured:
		return "configured client"
	case ClientMetadataDocument:
		return "client ID metadata document"
	case ClientRegisteredEarlier:
		return "client registered earlier"
	case ClientRegisteredNow:
		return "client registered now"
	}
	return "unknown client"
}

// ErrNoClient is returned by Login when the config names no client and
// the authorization server offers no way to get one.
var ErrNoClient = errors.New("no client to sign in with: the config names no client_id, and the authorization server takes neither a client ID metadata document nor dynamic registration")

// A result is what the loopback listener got: a code, or an error (the
// authorization server's, or the issuer check's).
type result struct {
	code, state string
	err         error
}

// Login runs the flow and stores the token it gets. It waits for the
// redirect until ctx ends.
func Login(ctx context.Context, r Request) (tokenstore.Token, Client, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return tokenstore.Token{}, Client{}, fmt.Errorf("listening for the login redirect: %w", err)
	}
	defer ln.Close()
	redirect := fmt.Sprintf("http://%s%s", ln.Addr(), CallbackPath)
	client := r.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	tokens := &tokenstore.ServerTokens{Store: r.Store, Server: r.Server, Resource: r.URL}
	ch, header := probe(ctx, client, r.URL)
	prm := findResource(ctx, client, r.URL, ch)
	scopes := r.Scopes
	if len(scopes) == 0 {
		scopes = chooseScopes(ch, prm)
	}
	prev, _, err := r.Store.Get(ctx, r.Server)
	if err != nil {
		return tokenstore.Token{}, Client{}, err
	}
	scopes = stepUpScopes(scopes, prev, r.URL)
	h, used, err := r.handler(ctx, client, tokens, redirect, scopes, func(h *transport.OAuthHandler) { discoverWith(h, r.URL, prm, header) })
	if err != nil {
		return tokenstore.Token{}, Client{}, err
	}

	verifier, err := transport.GenerateCodeVerifier()
	if err != nil {
		return tokenstore.Token{}, Client{}, err
	}
	state, err := transport.GenerateState()
	if err != nil {
		return tokenstore.Token{}, Client{}, err
	}
	authURL, err := h.GetAuthorizationURL(ctx, state, transport.GenerateCodeChallenge(verifier))
	if err != nil {
		return tokenstore.Token{}, Client{}, fmt.Errorf("finding where %q signs in: %w", r.Server, err)
	}

	// The issuer the answer must name is recorded before the person is
	// sent away (the 2026-07-28 spec's authorization response validation).
	md, err := h.GetServerMetadata(ctx)
	if err != nil {
		return tokenstore.Token{}, Client{}, fmt.Errorf("finding where %q signs in: %w", r.Server, err)
	}
	check := issuerCheck{issuer: md.Issuer, required: readAuthServer(ctx, client, md.Issuer).ResponseIssuer}

	got := make(chan result, 1)
	srv := &http.Server{Handler: callback(got, check), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	if err := r.Show(authURL); err != nil {
		return tokenstore.Token{}, Client{}, err
	}
	var res result
	select {
	case res = <-got:
	case <-ctx.Done():
		return tokenstore.Token{}, Client{}, fmt.Errorf("waiting for the sign-in to %q: %w", r.Server, ctx.Err())
	}
	if res.err != nil {
		return tokenstore.Token{}, Client{}, res.err
	}
	if err := h.ProcessAuthorizationResponse(ctx, res.code, res.state, verifier); err != nil {
		return tokenstore.Token{}, Client{}, fmt.Errorf("exchanging the code of %q: %w", r.Server, err)
	}
	// The token is stored; add the issuer it came from.
	tok, ok, err := r.Store.Get(ctx, r.Server)
	if err != nil {
		return tokenstore.Token{}, Client{}, fmt.Errorf("reading the new token of %q: %w", r.Server, err)
	}
	if !ok {
		return tokenstore.Token{}, Client{}, fmt.Errorf("the token of %q was not stored", r.Server)
	}
	tok.Issuer = md.Issuer
	if err := r.Store.Put(ctx, r.Server, tok); err != nil {
		return tokenstore.Token{}, Client{}, err
	}
	return tok, used, nil
}

// handler is the OAuth handler of the login: discovery as discover sets
// it up, then the client, in this order: the configured one; the
// one registered earlier at the same authorization server; the metadata
// document, if the server takes it; one registered now (kept in tokens).
func (r Request) handler(ctx context.Context, client *http.Client, tokens *tokenstore.ServerTokens, redirect string, scopes []string, discover func(*transport.OAuthHandler)) (*transport.OAuthHandler, Client, error) {
	newHandler := func(id, secret, method string) *transport.OAuthHandler {
		h := transport.NewOAuthHandler(transport.OAuthConfig{
			ClientID: id, ClientSecret: secret, TokenEndpointAuthMethod: method,
			ClientURI: clientURI, RedirectURI: redirect, Scopes: scopes,
			TokenStore: tokens, PKCEEnabled: true, HTTPClient: client,
		})
		h.SetBaseURL(r.URL)
		discover(h)
		return h
	}
	h := newHandler(r.ClientID, r.ClientSecret, "")
	if r.ClientID != "" {
		return h, Client{ID: r.ClientID, How: ClientConfigured}, nil
	}
	md, err := h.GetServerMetadata(ctx)
	if err != nil {
		return nil, Client{}, fmt.Errorf("finding where %q signs in: %w", r.Server, err)
	}
	if c, err := tokens.Client(ctx); err != nil {
		return nil, Client{}, err
	} else if c != nil && c.Issuer == md.Issuer {
		return newHandler(c.ID, c.Secret, c.AuthMethod), Client{ID: c.ID, How: ClientRegisteredEarlier}, nil
	}
	if r.ClientMetadataURL != "" && readAuthServer(ctx, client, md.Issuer).MetadataDocuments {
		return newHandler(r.ClientMetadataURL, "", ""), Client{ID: r.ClientMetadataURL, How: ClientMetadataDocument}, nil
	}
	if md.RegistrationEndpoint == "" {
		return nil, Client{}, fmt.Errorf("signing in to %q: %w", r.Server, ErrNoClient)
	}
	c, err := register(ctx, client, md.RegistrationEndpoint, redirect, scopes)
	if err != nil {
		return nil, Client{}, fmt.Errorf("registering mcpwarden as a client of %q: %w", md.Issuer, err)
	}
	c.Issuer = md.Issuer
	if err := tokens.SaveClient(ctx, c); err != nil {
		return nil, Client{}, err
	}
	return newHandler(c.ID, c.Secret, c.AuthMethod), Client{ID: c.ID, How: ClientRegisteredNow}, nil
}

// callback takes the one redirect of the flow: its code and state, or the
// error the authorization server sent; a redirect that fails check is
// neither acted on nor shown, whatever it says.
func callback(got chan<- result, check issuerCheck) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(CallbackPath, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		res := result{code: q.Get("code"), state: q.Get("state")}
		switch err := check.check(q); {
		case err != nil:
			res = result{err: err}
		case q.Get("error") != "":
			res.err = fmt.Errorf("the sign-in was refused: %s: %s", q.Get("error"), q.Get("error_description"))
		case res.code == "":
			res.err = errors.New("the sign-in came back without a code")
		}
		select {
		case got <- res:
		default: // a second redirect: the first one counts
			http.Error(w, "this sign-in is already done", http.StatusConflict)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		msg := "Signed in. You can close this window and return to mcpwarden."
		if res.err != nil {
			msg = res.err.Error()
		}
		fmt.Fprintf(w, "<!doctype html><title>mcpwarden login</title><p>%s</p>\n", html.EscapeString(msg))
	})
	return mux
}

// stepUpScopes are the scopes of a login that follows prev, the server's
// entry in the store: after the server refused prev's token for lacking
// scope (a step-up), the union of scopes, the scope prev was granted (if
// it was for the server's URL) and the scope the server wants (SEP-2350:
// stepping up for one operation must not lose another); scopes otherwise,
// so that a login after the config narrowed them asks for no more.
func stepUpScopes(scopes []string, prev tokenstore.Token, serverURL string) []string {
	if prev.StepUpScope == "" {
		return scopes
	}
	if prev.Resource == serverURL {
		scopes = withScopes(scopes, strings.Fields(prev.Scope))
	}
	return withScopes(scopes, strings.Fields(prev.StepUpScope))
}

// withScopes is scopes and then those of more it lacks.
func withScopes(scopes, more []string) []string {
	out := slices.Clone(scopes)
	for _, s := range more {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
