// Package oauth makes mcpwarden an OAuth 2.1 resource server, as the MCP
// authorization specification has it: a Verifier turns a bearer token into
// an Identity (JWTs checked against the issuer's keys, opaque tokens
// introspected), Challenge builds the WWW-Authenticate answer to a request
// it refuses, MetadataHandler serves the protected resource metadata
// (RFC 9728) that answer points at, and a Matcher picks the client profile
// an identity's claims select. It knows nothing of MCP beyond borrowing
// mcp-go's metadata handler.
package oauth

import (
	"net/url"
	"time"
)

// An Identity is who a verified access token speaks for, read from its
// claims (or the introspection answer). Email is empty when the token
// says it is not verified.
type Identity struct {
	// Issuer is the token's issuer, as configured.
	Issuer  string
	Subject string
	Email   string
	Groups  []string
	// Scopes are the scopes the token grants.
	Scopes []string
	// Expiry is when the token stops being valid.
	Expiry time.Time
}

// PrincipalPrefix starts every principal of an OAuth identity.
const PrincipalPrefix = "oidc:"

// Principal names the identity in the audit log, on the approvals page and
// in @principal: "oidc:<issuer host>:<subject>". The subject is unique
// only at its issuer, hence the host.
func (id Identity) Principal() string {
	host := id.Issuer
	if u, err := url.Parse(id.Issuer); err == nil && u.Host != "" {
		host = u.Host
	}
	return PrincipalPrefix + host + ":" + id.Subject
}
