package config

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/mcpwarden/mcpwarden/internal/hostport"
)

// A ServerOAuth makes mcpwarden an OAuth client of a remote server
// (servers.<name>.oauth): it finds the authorization server from the
// server's 401 (RFC 9728, then RFC 8414 or OpenID discovery), asks for
// tokens for the server's URL (RFC 8707), keeps them encrypted in the
// token file (UpstreamTokenFile) and refreshes them before they expire.
type ServerOAuth struct {
	// ClientID is the client mcpwarden is registered as at the
	// authorization server. ClientMetadataURL, instead, is the https URL
	// of a client ID metadata document, which serves as the client ID
	// when the authorization server says it takes them. With neither (or
	// a server that does not take the document), `mcpwarden login`
	// registers a client (RFC 7591) and keeps it in the token file.
	ClientID          string `koanf:"client_id"`
	ClientMetadataURL string `koanf:"client_metadata_url"`
	// ClientSecretEnv names the environment variable holding the client's
	// secret; "" for a public client (PKCE alone).
	ClientSecretEnv string `koanf:"client_secret_env"`
	// Scopes are requested with every token.
	Scopes []string `koanf:"scopes"`
	// Grant is how tokens are obtained: authorization_code (the default;
	// a person signs in once with `mcpwarden login <server>`) or
	// client_credentials (the client's own identity, for unattended
	// deployments; needs a secret).
	Grant string `koanf:"grant"`
}

// Grant values.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
)

// EffectiveGrant is the grant in use: Grant, or authorization_code.
func (o *ServerOAuth) EffectiveGrant() string {
	if o.Grant == "" {
		return GrantAuthorizationCode
	}
	return o.Grant
}

// EffectiveClientID is the client ID sent: ClientID, or ClientMetadataURL.
func (o *ServerOAuth) EffectiveClientID() string {
	if o.ClientID != "" {
		return o.ClientID
	}
	return o.ClientMetadataURL
}

// validateOAuth checks servers.<name>.oauth.
func (s Server) validateOAuth() []error {
	o := s.OAuth
	if o == nil {
		return nil
	}
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(".oauth"+format, args...)) }
	if t := s.EffectiveTransport(); t != TransportHTTP && t != TransportSSE {
		add(": only a remote server (url, transport http or sse) takes oauth")
	}
	if u, err := url.Parse(s.URL); err == nil && u.Scheme == "http" && !hostport.IsLoopback(u.Hostname()) {
		add(": the server's url %q must be https (http only on a loopback host): tokens must not travel in the clear", s.URL)
	}
	for k := range s.Headers {
		if strings.EqualFold(k, "Authorization") {
			add(": the Authorization header comes from the OAuth token; drop headers.%s", k)
		}
	}
	switch {
	case o.ClientID == "" && o.ClientMetadataURL == "" && o.EffectiveGrant() == GrantClientCredentials:
		add(": client_id is required for grant client_credentials")
	case o.ClientID != "" && o.ClientMetadataURL != "":
		add(": set client_id or client_metadata_url, not both")
	case o.ClientMetadataURL != "":
		if u, err := url.Parse(o.ClientMetadataURL); err != nil || u.Scheme != "https" || u.Path == "" || u.Path == "/" {
			add(".client_metadata_url: %q must be an https URL with a path", o.ClientMetadataURL)
		}
	}
	switch o.EffectiveGrant() {
	case GrantAuthorizationCode:
	case GrantClientCredentials:
		if o.ClientSecretEnv == "" {
			add(".client_secret_env: required for grant client_credentials")
		}
	default:
		add(".grant: %q is not one of %s, %s", o.Grant, GrantAuthorizationCode, GrantClientCredentials)
	}
	return errs
}

// upstreamTokenFileName is the upstream token file's name.
const upstreamTokenFileName = "upstream-tokens.enc"

// UpstreamTokenFile is where the tokens mcpwarden holds for remote servers
// are kept (encrypted): $XDG_STATE_HOME/mcpwarden, else
// ~/.local/state/mcpwarden. Unlike StateDir it never uses
// $XDG_RUNTIME_DIR, which is emptied at logout: a refresh token should
// outlive a reboot. getenv reads the environment.
func UpstreamTokenFile(getenv func(string) string) (string, error) {
	if base := getenv("XDG_STATE_HOME"); filepath.IsAbs(base) {
		return filepath.Join(base, stateDirName, upstreamTokenFileName), nil
	}
	if home := getenv("HOME"); filepath.IsAbs(home) {
		return filepath.Join(home, ".local", "state", stateDirName, upstreamTokenFileName), nil
	}
	return "", errors.New("no private directory for the upstream token file: set XDG_STATE_HOME or HOME")
}
