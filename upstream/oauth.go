package upstream

// mcpwarden as an OAuth client of a remote server: mcp-go's client OAuth
// support does the work (discovery from the server's 401 through RFC 9728
// to RFC 8414 or OpenID metadata, PKCE, the RFC 8707 resource, refresh);
// this sets it up from the Spec and says plainly when a login is needed.

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/mcpwarden/mcpwarden/internal/wwwauth"
)

// An OAuth makes mcpwarden an OAuth client of a streamable HTTP server.
type OAuth struct {
	// ClientID is the registered client, or the URL of a client ID
	// metadata document. ClientSecret is "" for a public client.
	ClientID     string
	ClientSecret string
	// Scopes are requested with every token.
	Scopes []string
	// Registered, when set, is asked first for the client mcpwarden
	// registered itself as at login (RFC 7591); ClientID and ClientSecret
	// serve when it has none. Its error fails the session's start: it
	// also checks that the stored credentials still belong to the
	// server's authorization server.
	Registered Registrations
	// StepUps, when set, is told the scope the server wants when it
	// refuses the token for lacking it (403 insufficient_scope), so that
	// the next login asks for it.
	StepUps StepUps
	// Tokens holds the server's token; it is read before every request and
	// given the token a refresh obtains. A store with no token makes the
	// server fail to start with ErrLoginRequired.
	Tokens transport.TokenStore
}

// An OAuthClient is a client registration: its ID, its secret ("" for a
// public client) and how it authenticates at the token endpoint
// (client_secret_basic, client_secret_post, none; "" lets mcp-go choose).
type OAuthClient struct {
	ID, Secret, AuthMethod string
}

// Registrations gives the client registered for a server, if there is
// one. It is asked each time the server's session starts, with the
// session's HTTP client (nil: a default one), and may check with the
// server that the stored credentials still belong to its authorization
// server, returning an error wrapping ErrLoginRequired when they do not.
type Registrations interface {
	RegisteredClient(ctx context.Context, client *http.Client) (OAuthClient, bool, error)
}

// StepUps keeps the scope a server asked for more of.
type StepUps interface {
	NeedScope(ctx context.Context, scope string) error
}

// An InsufficientScopeError is the error of a request the server refused
// because the token lacks Scope (RFC 6750 §3.1): a person has to sign in
// again, and the login asks for Scope. It wraps ErrLoginRequired.
type InsufficientScopeError struct{ Scope string }

func (e *InsufficientScopeError) Error() string {
	return fmt.Sprintf("the server wants OAuth scope %q, which its token lacks: sign in to it again with `mcpwarden login`", e.Scope)
}

func (e *InsufficientScopeError) Unwrap() error { return ErrLoginRequired }

// An AuthServerChangedError is the error of a server that names another
// authorization server (Now) than the one its stored client and token
// belong to (Was): the client's credentials and the refresh token are not
// sent to Now, and a person has to sign in again, which registers at Now
// (SEP-2352). It wraps ErrLoginRequired.
type AuthServerChangedError struct{ Was, Now string }

func (e *AuthServerChangedError) Error() string {
	return fmt.Sprintf("the server's authorization server is now %q, not %q where its client and token belong: sign in to it again with `mcpwarden login` (a client_id in the config must be registered at the new one)", e.Now, e.Was)
}

func (e *AuthServerChangedError) Unwrap() error { return ErrLoginRequired }

// maxStepUpScope caps the scope a server may ask for more of: it is kept
// for the next login and quoted in the call's error.
const maxStepUpScope = 1024

// A stepUpTransport turns a 403 insufficient_scope answer into an
// InsufficientScopeError, telling StepUps the scope wanted. mcp-go would
// report the answer as an anonymous failure.
type stepUpTransport struct {
	base    http.RoundTripper
	stepUps StepUps
}

func (t stepUpTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusForbidden {
		return resp, err
	}
	c := wwwauth.Parse(resp.Header.Values("WWW-Authenticate"))
	if c.Error != wwwauth.ErrorInsufficientScope {
		return resp, nil
	}
	resp.Body.Close()
	if len(c.Scope) > maxStepUpScope {
		return nil, fmt.Errorf("the server wants more OAuth scope than its token has, but names %d bytes of it (more than %d)", len(c.Scope), maxStepUpScope)
	}
	if t.stepUps != nil {
		if err := t.stepUps.NeedScope(req.Context(), c.Scope); err != nil {
			return nil, fmt.Errorf("keeping the scope the server wants: %w", err)
		}
	}
	return nil, &InsufficientScopeError{Scope: c.Scope}
}

// withStepUps is client with its transport wrapped in a stepUpTransport
// when spec is an OAuth client; client itself otherwise.
func withStepUps(spec Spec, client *http.Client) *http.Client {
	if spec.OAuth == nil {
		return client
	}
	c := *client
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = stepUpTransport{base: base, stepUps: spec.OAuth.StepUps}
	return &c
}

// ErrLoginRequired is the error of a server that needs an OAuth token
// mcpwarden does not have (or can no longer refresh): a person has to
// sign in once with `mcpwarden login <server>`. UnavailableError says so.
var ErrLoginRequired = errors.New("the server needs an OAuth login")

// httpOAuthOptions are the transport options that make the session an
// OAuth client of spec's server, if spec asks for one. client is the
// session's HTTP client, which discovery and token requests use too.
func httpOAuthOptions(ctx context.Context, spec Spec, client *http.Client) ([]transport.StreamableHTTPCOption, error) {
	cfg, err := oauthConfig(ctx, spec, client)
	if cfg == nil || err != nil {
		return nil, err
	}
	return []transport.StreamableHTTPCOption{transport.WithHTTPOAuth(*cfg)}, nil
}

// sseOAuthOptions are httpOAuthOptions for an SSE server.
func sseOAuthOptions(ctx context.Context, spec Spec) ([]transport.ClientOption, error) {
	cfg, err := oauthConfig(ctx, spec, nil)
	if cfg == nil || err != nil {
		return nil, err
	}
	return []transport.ClientOption{transport.WithOAuth(*cfg)}, nil
}

// oauthConfig is mcp-go's configuration of spec's OAuth client, nil when
// the server needs none.
func oauthConfig(ctx context.Context, spec Spec, client *http.Client) (*transport.OAuthConfig, error) {
	o := spec.OAuth
	if o == nil {
		return nil, nil
	}
	c := OAuthClient{ID: o.ClientID, Secret: o.ClientSecret}
	if o.Registered != nil {
		reg, ok, err := o.Registered.RegisteredClient(ctx, client)
		if err != nil {
			return nil, fmt.Errorf("reading the registered OAuth client: %w", err)
		}
		if ok {
			c = reg
		}
	}
	return &transport.OAuthConfig{
		ClientID:                c.ID,
		ClientSecret:            c.Secret,
		TokenEndpointAuthMethod: c.AuthMethod,
		Scopes:                  o.Scopes,
		TokenStore:              o.Tokens,
		PKCEEnabled:             true,
		HTTPClient:              client,
	}, nil
}

// loginRequired reports whether err says the server wants a token
// mcpwarden has not got.
func loginRequired(err error) bool {
	return errors.Is(err, transport.ErrOAuthAuthorizationRequired) || errors.Is(err, ErrLoginRequired)
}
