package oauthlogin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/mcpwarden/mcpwarden/internal/tokenstore"
)

// maxTokenResponse caps the token endpoint's answer.
const maxTokenResponse = 1 << 20

// A ClientCredentials is a server's token store for the client
// credentials grant (RFC 6749 §4.4): whenever it holds no token that is
// still good (see tokenstore.RefreshAhead), it asks the server's
// authorization server for one as the client itself, for the server's URL
// (RFC 8707), and stores it. No person signs in. It is safe for concurrent
// use; one token request runs at a time.
type ClientCredentials struct {
	Tokens       *tokenstore.ServerTokens
	ClientID     string
	ClientSecret string
	Scopes       []string
	// HTTPClient makes the discovery and token requests; nil means one
	// with a 30 s timeout.
	HTTPClient *http.Client

	mu      sync.Mutex
	handler *transport.OAuthHandler // discovery, kept once it succeeded
}

var _ transport.TokenStore = (*ClientCredentials)(nil)

// GetToken returns the stored token, or a new one when it has none that
// is still good.
func (c *ClientCredentials) GetToken(ctx context.Context) (*transport.Token, error) {
	if tok, err := c.stored(ctx); tok != nil || err != nil {
		return tok, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if tok, err := c.stored(ctx); tok != nil || err != nil { // another caller got one
		return tok, err
	}
	return c.obtain(ctx)
}

// SaveToken stores tok.
func (c *ClientCredentials) SaveToken(ctx context.Context, tok *transport.Token) error {
	return c.Tokens.SaveToken(ctx, tok)
}

// stored is the stored token if it is still good, else nil.
func (c *ClientCredentials) stored(ctx context.Context) (*transport.Token, error) {
	tok, err := c.Tokens.GetToken(ctx)
	switch {
	case errors.Is(err, transport.ErrNoToken):
		return nil, nil
	case err != nil:
		return nil, err
	case tok.IsExpired():
		return nil, nil
	}
	return tok, nil
}

// obtain asks the token endpoint for a token and stores it.
func (c *ClientCredentials) obtain(ctx context.Context) (*transport.Token, error) {
	client := c.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	if c.handler == nil {
		h := transport.NewOAuthHandler(transport.OAuthConfig{
			ClientID: c.ClientID, ClientSecret: c.ClientSecret, Scopes: c.Scopes,
			TokenStore: c.Tokens, HTTPClient: client,
		})
		h.SetBaseURL(c.Tokens.Resource)
		ch, header := probe(ctx, client, c.Tokens.Resource)
		discoverWith(h, c.Tokens.Resource, findResource(ctx, client, c.Tokens.Resource, ch), header)
		c.handler = h
	}
	md, err := c.handler.GetServerMetadata(ctx)
	if err != nil {
		c.handler = nil // discover again next time
		return nil, fmt.Errorf("finding the token endpoint of %q: %w", c.Tokens.Server, err)
	}
	form := url.Values{"grant_type": {"client_credentials"}, "resource": {c.Tokens.Resource}}
	if len(c.Scopes) > 0 {
		form.Set("scope", strings.Join(c.Scopes, " "))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, md.TokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(c.ClientID), url.QueryEscape(c.ClientSecret))
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("asking for a token for %q: %w", c.Tokens.Server, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponse))
	if err != nil {
		return nil, fmt.Errorf("reading the token for %q: %w", c.Tokens.Server, err)
	}
	var tok transport.Token
	var oerr transport.OAuthError
	if json.Unmarshal(body, &oerr) == nil && oerr.ErrorCode != "" {
		return nil, fmt.Errorf("asking for a token for %q: %w", c.Tokens.Server, oerr)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("asking for a token for %q: %s", c.Tokens.Server, resp.Status)
	}
	if err := json.Unmarshal(body, &tok); err != nil || tok.AccessToken == "" {
		return nil, fmt.Errorf("the token endpoint of %q answered no token", c.Tokens.Server)
	}
	if tok.ExpiresIn > 0 {
		tok.ExpiresAt = time.Now().Add(time.Duration(tok.ExpiresIn) * time.Second)
	}
	if err := c.Tokens.SaveToken(ctx, &tok); err != nil {
		return nil, err
	}
	if md.Issuer != "" {
		if t, ok, err := c.Tokens.Store.Get(ctx, c.Tokens.Server); err == nil && ok && t.Issuer == "" {
			t.Issuer = md.Issuer
			_ = c.Tokens.Store.Put(ctx, c.Tokens.Server, t) // the issuer is for the record only
		}
	}
	return &tok, nil
}
