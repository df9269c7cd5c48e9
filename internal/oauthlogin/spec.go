package oauthlogin

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/internal/tokenstore"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// UpstreamOAuth is how mcpwarden is an OAuth client of the server name
// (srv.OAuth), nil when it is not. A token file that cannot be opened or
// a client secret that is not set makes a store that fails, so that the
// server reports why and the others still start.
func UpstreamOAuth(name string, srv config.Server, getenv func(string) string) *upstream.OAuth {
	o := srv.OAuth
	if o == nil {
		return nil
	}
	out := &upstream.OAuth{ClientID: o.EffectiveClientID(), Scopes: o.Scopes}
	store, err := OpenStore(getenv)
	if err != nil {
		out.Tokens = tokenstore.Unusable(err)
		return out
	}
	tokens := &tokenstore.ServerTokens{Store: store, Server: name, Resource: srv.URL}
	out.Tokens = tokens
	out.StepUps = tokens
	if env := o.ClientSecretEnv; env != "" {
		if out.ClientSecret = getenv(env); out.ClientSecret == "" {
			out.Tokens = tokenstore.Unusable(fmt.Errorf("servers.%s.oauth.client_secret_env: environment variable %s is empty or not set", name, env))
			return out
		}
	}
	if o.EffectiveGrant() == config.GrantClientCredentials {
		// The client's own token: no login to bind, and a client
		// registered by hand goes wherever the server sends it.
		out.Tokens = &ClientCredentials{Tokens: tokens, ClientID: out.ClientID, ClientSecret: out.ClientSecret, Scopes: o.Scopes}
		return out
	}
	out.Registered = registrations{tokens: tokens, configured: o.ClientID != ""}
	return out
}

// OpenStore opens the upstream token file. Its key is found on first
// use (tokenstore.ResolveKey): MCPWARDEN_TOKEN_KEY when it is set, else
// the OS keyring where there is one; Store.KeySource says which.
func OpenStore(getenv func(string) string) (*tokenstore.Store, error) {
	path, err := config.UpstreamTokenFile(getenv)
	if err != nil {
		return nil, err
	}
	return tokenstore.OpenLazy(path, func(ctx context.Context) ([]byte, tokenstore.KeySource, error) {
		return tokenstore.ResolveKey(ctx, getenv, tokenstore.OSKeyring{})
	}), nil
}

// registrations gives upstream the client a login registered for the
// server (tokenstore.Token.Client), unless the config names one, and
// binds the stored credentials to the authorization server they belong
// to: the registration's, else the token's issuer. When the server now
// names another one, neither the client's credentials nor the refresh
// token are sent to it (SEP-2352), and the server needs a login, which
// registers at the new one (a configured client must be registered there
// by hand).
type registrations struct {
	tokens     *tokenstore.ServerTokens
	configured bool // the config names the client: a registration is not used
}

func (r registrations) RegisteredClient(ctx context.Context, client *http.Client) (upstream.OAuthClient, bool, error) {
	t, ok, err := r.tokens.Store.Get(ctx, r.tokens.Server)
	if err != nil || !ok {
		return upstream.OAuthClient{}, false, err
	}
	c := t.Client
	if r.configured {
		c = nil
	}
	var bound string
	switch {
	case c != nil:
		bound = c.Issuer
	case t.Resource == r.tokens.Resource: // a token for another URL is not used
		bound = t.Issuer
	}
	if bound == "" { // nothing stored that belongs to an authorization server
		return upstream.OAuthClient{}, false, nil
	}
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	now, err := currentIssuer(ctx, client, r.tokens.Resource)
	if err != nil {
		return upstream.OAuthClient{}, false, fmt.Errorf("finding the authorization server of %s: %w", r.tokens.Resource, err)
	}
	if now != bound {
		return upstream.OAuthClient{}, false, &upstream.AuthServerChangedError{Was: bound, Now: now}
	}
	if c == nil {
		return upstream.OAuthClient{}, false, nil
	}
	return upstream.OAuthClient{ID: c.ID, Secret: c.Secret, AuthMethod: c.AuthMethod}, true, nil
}
