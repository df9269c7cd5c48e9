package oauth

import (
	"fmt"
	"net/http"
	"net/url"

	mcpserver "github.com/mark3labs/mcp-go/server"
)

// Metadata is a protected resource metadata document (RFC 9728 §2): what
// a client reads, after a 401, to find where to get a token.
type Metadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
}

// Metadata is the document for this verifier's resource: the resource
// URL (Config.Resource, else the audience), the issuer as its one authorization server, the required
// scopes, and the Authorization header as the one way to send a token.
func (v *Verifier) Metadata() Metadata {
	return Metadata{
		Resource:               v.cfg.resource(),
		AuthorizationServers:   []string{v.cfg.Issuer},
		ScopesSupported:        v.RequiredScopes(),
		BearerMethodsSupported: []string{"header"},
	}
}

// MetadataURL is where this verifier's resource metadata is served, for
// the challenge.
func (v *Verifier) MetadataURL() string {
	u, err := MetadataURL(v.cfg.resource())
	if err != nil {
		panic(fmt.Sprintf("oauth: resource URL checked by Validate: %v", err))
	}
	return u
}

// MetadataPath is the path of this verifier's resource metadata, for the
// listener's mux.
func (v *Verifier) MetadataPath() string {
	u, _ := url.Parse(v.MetadataURL())
	return u.Path
}

// MetadataURL is where the metadata of the resource at resourceURL is
// served: the well-known prefix inserted between its host and its path
// (RFC 9728 §3.1), https://h/mcp → https://h/.well-known/oauth-protected-resource/mcp.
func MetadataURL(resourceURL string) (string, error) {
	u, err := url.Parse(resourceURL)
	if err != nil {
		return "", fmt.Errorf("parsing resource URL %q: %w", resourceURL, err)
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("resource URL %q: want an absolute http(s) URL without query or fragment", resourceURL)
	}
	u.Path = mcpserver.ProtectedResourceMetadataPath(resourceURL)
	u.RawPath = ""
	return u.String(), nil
}

// MetadataHandler serves m as JSON, through mcp-go's handler: GET and
// HEAD, OPTIONS for a CORS preflight, any origin (a browser-based client
// needs to read it), not cached (so a change is seen at once).
func MetadataHandler(m Metadata) http.Handler {
	return mcpserver.NewProtectedResourceMetadataHandler(mcpserver.ProtectedResourceMetadataConfig{
		Resource:               m.Resource,
		AuthorizationServers:   m.AuthorizationServers,
		ScopesSupported:        m.ScopesSupported,
		BearerMethodsSupported: m.BearerMethodsSupported,
	})
}
