package oauthlogin

// The RFC 9207 mix-up defence, as the 2026-07-28 MCP authorization spec
// requires it of a client: the issuer of the authorization server the
// person is sent to is recorded from its validated metadata, and the
// answer that comes back to the loopback listener must name that issuer
// (iss) exactly, or name none when the server does not promise to.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/mcpwarden/mcpwarden/internal/textcut"
)

// ErrIssuerMismatch is returned by Login when the authorization response
// does not come from the authorization server the person was sent to.
var ErrIssuerMismatch = errors.New("the sign-in answer does not come from the authorization server mcpwarden sent you to (RFC 9207)")

// An issuerCheck is what an authorization response has to say about its
// issuer.
type issuerCheck struct {
	// issuer is the issuer of the authorization server's metadata.
	issuer string
	// required is its authorization_response_iss_parameter_supported: it
	// names itself in every response, so a response without iss is not
	// its own.
	required bool
}

// check tells whether the response whose query is q may be acted on: its
// iss is exactly the issuer (no case folding, trailing slash, port or
// percent-encoding normalisation), or absent when not required. An
// error response that fails it is not to be acted on or shown either.
func (c issuerCheck) check(q url.Values) error {
	iss, present := q["iss"]
	switch {
	case len(iss) > 1:
		return fmt.Errorf("%w: it names %d issuers; sign in again", ErrIssuerMismatch, len(iss))
	case present && iss[0] != c.issuer:
		got, _ := textcut.Head(iss[0], 200)
		return fmt.Errorf("%w: it names issuer %q, not %q; sign in again, and if this repeats, something between you and %q is not what it seems", ErrIssuerMismatch, got, c.issuer, c.issuer)
	case !present && c.required:
		return fmt.Errorf("%w: it names no issuer, though %q says it names itself in every answer; sign in again", ErrIssuerMismatch, c.issuer)
	}
	return nil
}

// An authServer is what mcpwarden reads of an authorization server's
// metadata that mcp-go does not: whether it takes client ID metadata
// documents as client IDs, and whether it names itself in its
// authorization responses. The zero authServer (metadata not found) says
// neither.
type authServer struct {
	MetadataDocuments bool `json:"client_id_metadata_document_supported"`
	ResponseIssuer    bool `json:"authorization_response_iss_parameter_supported"`
}

// readAuthServer reads the metadata of issuer at the well-known URLs RFC
// 8414 and OpenID Connect Discovery give for it, in mcp-go's order; a
// document that declares another issuer is not the issuer's.
func readAuthServer(ctx context.Context, client *http.Client, issuer string) authServer {
	for _, u := range authServerMetadataURLs(issuer) {
		var md struct {
			Issuer string `json:"issuer"`
			authServer
		}
		if getJSON(ctx, client, u, &md) && md.Issuer == issuer {
			return md.authServer
		}
	}
	return authServer{}
}
