package upstream

// mcpwarden as an OAuth client of a remote server: mcp-go's client OAuth
// support does the work (discovery from the server's 401 through RFC 9728
// to RFC 8414 or OpenID metadata, PKCE, the RFC 8707 resource, refresh);
// this sets it up from the Spec and says plainly when a login is needed.

import (
	"errors"
	"net/http"

	"github.com/mark3labs/mcp-go/client/transport"
)

// An OAuth makes mcpwarden an OAuth client of a streamable HTTP server.
type OAuth struct {
	// ClientID is the registered client, or the URL of a client ID
	// metadata document. ClientSecret is "" for a public client.
	ClientID     string
	ClientSecret string
	// Scopes are requested with every token.
	Scopes []string
	// Tokens holds the server's token; it is read before every request and
	// given the token a refresh obtains. A store with no token makes the
	// server fail to start with ErrLoginRequired.
	Tokens transport.TokenStore
}

// ErrLoginRequired is the error of a server that needs an OAuth token
// mcpwarden does not have (or can no longer refresh): a person has to
// sign in once with `mcpwarden login <server>`. UnavailableError says so.
var ErrLoginRequired = errors.New("the server needs an OAuth login")

// httpOAuthOptions are the transport options that make the session an
// OAuth client of spec's server, if spec asks for one. client is the
// session's HTTP client, which discovery and token requests use too.
func httpOAuthOptions(spec Spec, client *http.Client) []transport.StreamableHTTPCOption {
	if spec.OAuth == nil {
		return nil
	}
	return []transport.StreamableHTTPCOption{transport.WithHTTPOAuth(transport.OAuthConfig{
		ClientID:     spec.OAuth.ClientID,
		ClientSecret: spec.OAuth.ClientSecret,
		Scopes:       spec.OAuth.Scopes,
		TokenStore:   spec.OAuth.Tokens,
		PKCEEnabled:  true,
		HTTPClient:   client,
	})}
}

// loginRequired reports whether err says the server wants a token
// mcpwarden has not got.
func loginRequired(err error) bool {
	return errors.Is(err, transport.ErrOAuthAuthorizationRequired)
}
