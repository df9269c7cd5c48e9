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
	// ClientID, ClientSecret ("" for a public client) and Scopes are those
	// of the server's oauth block.
	ClientID     string
	ClientSecret string
	Scopes       []string
	Store        *tokenstore.Store
	// Show is given the authorization URL the person has to open: it
	// prints it, and may open a browser on it.
	Show func(authURL string) error
	// HTTPClient makes the discovery and token requests; nil means one
	// with a 30 s timeout.
	HTTPClient *http.Client
}

// A result is what the loopback listener got: a code, or an error.
type result struct {
	code, state string
	err         error
}

// Login runs the flow and stores the token it gets. It waits for the
// redirect until ctx ends.
func Login(ctx context.Context, r Request) (tokenstore.Token, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return tokenstore.Token{}, fmt.Errorf("listening for the login redirect: %w", err)
	}
	redirect := fmt.Sprintf("http://%s%s", ln.Addr(), CallbackPath)
	client := r.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	tokens := &tokenstore.ServerTokens{Store: r.Store, Server: r.Server, Resource: r.URL}
	h := transport.NewOAuthHandler(transport.OAuthConfig{
		ClientID: r.ClientID, ClientSecret: r.ClientSecret, RedirectURI: redirect, Scopes: r.Scopes,
		TokenStore: tokens, PKCEEnabled: true, HTTPClient: client,
	})
	h.SetBaseURL(r.URL)
	probe(ctx, client, r.URL, h)

	verifier, err := transport.GenerateCodeVerifier()
	if err != nil {
		ln.Close()
		return tokenstore.Token{}, err
	}
	state, err := transport.GenerateState()
	if err != nil {
		ln.Close()
		return tokenstore.Token{}, err
	}
	authURL, err := h.GetAuthorizationURL(ctx, state, transport.GenerateCodeChallenge(verifier))
	if err != nil {
		ln.Close()
		return tokenstore.Token{}, fmt.Errorf("finding where %q signs in: %w", r.Server, err)
	}

	got := make(chan result, 1)
	srv := &http.Server{Handler: callback(got), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	if err := r.Show(authURL); err != nil {
		return tokenstore.Token{}, err
	}
	var res result
	select {
	case res = <-got:
	case <-ctx.Done():
		return tokenstore.Token{}, fmt.Errorf("waiting for the sign-in to %q: %w", r.Server, ctx.Err())
	}
	if res.err != nil {
		return tokenstore.Token{}, res.err
	}
	if err := h.ProcessAuthorizationResponse(ctx, res.code, res.state, verifier); err != nil {
		return tokenstore.Token{}, fmt.Errorf("exchanging the code of %q: %w", r.Server, err)
	}
	// The token is stored; add the issuer it came from.
	tok, ok, err := r.Store.Get(ctx, r.Server)
	if err != nil {
		return tokenstore.Token{}, fmt.Errorf("reading the new token of %q: %w", r.Server, err)
	}
	if !ok {
		return tokenstore.Token{}, fmt.Errorf("the token of %q was not stored", r.Server)
	}
	if md, err := h.GetServerMetadata(ctx); err == nil {
		tok.Issuer = md.Issuer
		if err := r.Store.Put(ctx, r.Server, tok); err != nil {
			return tokenstore.Token{}, err
		}
	}
	return tok, nil
}

// probe asks the server for nothing without a token, so that its 401
// names its resource metadata (RFC 9728 §5.1) for discovery; a server
// that does not answer 401 leaves discovery to the well-known URLs.
func probe(ctx context.Context, client *http.Client, serverURL string, h *transport.OAuthHandler) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, serverURL, strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"ping"}`))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		h.HandleUnauthorizedResponse(resp)
	}
}

// callback takes the one redirect of the flow: its code and state, or the
// error the authorization server sent.
func callback(got chan<- result) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(CallbackPath, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		res := result{code: q.Get("code"), state: q.Get("state")}
		switch {
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
