package testop

import (
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// A User is one account at the provider.
type User struct {
	// ID is the subject (sub) of the user's tokens.
	ID string
	// Email is put in the email claim; EmailVerified in email_verified.
	Email         string
	EmailVerified bool
	// Groups is put in the groups claim.
	Groups []string
}

// A Client is an OAuth client registered at the provider. Its access
// tokens are issued for Audience (the resource they are meant for).
type Client struct {
	ID     string
	Secret string
	// Audience is the aud of the client's access tokens.
	Audience []string
	// Opaque makes the client's access tokens opaque (to be introspected)
	// instead of JWTs.
	Opaque bool
	// Native makes it a native application, which may use RedirectURI on
	// any port (RFC 8252 §7.3), as a loopback login listener does.
	Native bool
}

// RedirectURI is the one redirect URI every test client has registered.
// Nothing listens there: Token stops at the redirect and reads the code.
const RedirectURI = "http://127.0.0.1:1/callback"

// opClient adapts a Client to op.Client.
type opClient struct{ c Client }

var _ op.Client = opClient{}

func (c opClient) GetID() string                    { return c.c.ID }
func (c opClient) RedirectURIs() []string           { return []string{RedirectURI} }
func (c opClient) PostLogoutRedirectURIs() []string { return nil }
func (c opClient) ApplicationType() op.ApplicationType {
	if c.c.Native {
		return op.ApplicationTypeNative
	}
	return op.ApplicationTypeWeb
}
func (c opClient) AuthMethod() oidc.AuthMethod { return oidc.AuthMethodBasic }
func (c opClient) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c opClient) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeCode, oidc.GrantTypeRefreshToken, oidc.GrantTypeClientCredentials}
}
func (c opClient) LoginURL(id string) string { return loginPath + "?" + loginIDParam + "=" + id }
func (c opClient) AccessTokenType() op.AccessTokenType {
	if c.c.Opaque {
		return op.AccessTokenTypeBearer
	}
	return op.AccessTokenTypeJWT
}
func (c opClient) IDTokenLifetime() time.Duration { return time.Hour }

// DevMode lets the web client use an http redirect URI.
func (c opClient) DevMode() bool { return true }
func (c opClient) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c opClient) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c opClient) IsScopeAllowed(string) bool           { return true }
func (c opClient) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c opClient) ClockSkew() time.Duration             { return 0 }

// authRequest is one authorization request, done once the test login
// handler has set its user.
type authRequest struct {
	id          string
	clientID    string
	audience    []string
	redirectURI string
	state       string
	nonce       string
	scopes      []string
	challenge   *oidc.CodeChallenge
	responseTyp oidc.ResponseType
	responseMod oidc.ResponseMode
	userID      string
	authTime    time.Time
}

var _ op.AuthRequest = (*authRequest)(nil)

func (a *authRequest) GetID() string                         { return a.id }
func (a *authRequest) GetACR() string                        { return "" }
func (a *authRequest) GetAMR() []string                      { return []string{"pwd"} }
func (a *authRequest) GetAudience() []string                 { return a.audience }
func (a *authRequest) GetAuthTime() time.Time                { return a.authTime }
func (a *authRequest) GetClientID() string                   { return a.clientID }
func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge { return a.challenge }
func (a *authRequest) GetNonce() string                      { return a.nonce }
func (a *authRequest) GetRedirectURI() string                { return a.redirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType    { return a.responseTyp }
func (a *authRequest) GetResponseMode() oidc.ResponseMode    { return a.responseMod }
func (a *authRequest) GetScopes() []string                   { return a.scopes }
func (a *authRequest) GetState() string                      { return a.state }
func (a *authRequest) GetSubject() string                    { return a.userID }
func (a *authRequest) Done() bool                            { return a.userID != "" }

// token is an issued access token, kept so that opaque tokens can be
// introspected.
type token struct {
	id       string
	clientID string
	subject  string
	audience []string
	scopes   []string
	expiry   time.Time
}

// refreshToken is an issued refresh token: what the token it refreshes
// was issued for. Each is used once (rotation).
type refreshToken struct {
	id       string
	clientID string
	subject  string
	audience []string
	scopes   []string
	authTime time.Time
}

var _ op.RefreshTokenRequest = (*refreshToken)(nil)

func (r *refreshToken) GetAMR() []string                 { return []string{"pwd"} }
func (r *refreshToken) GetAudience() []string            { return r.audience }
func (r *refreshToken) GetAuthTime() time.Time           { return r.authTime }
func (r *refreshToken) GetClientID() string              { return r.clientID }
func (r *refreshToken) GetScopes() []string              { return r.scopes }
func (r *refreshToken) GetSubject() string               { return r.subject }
func (r *refreshToken) SetCurrentScopes(scopes []string) { r.scopes = scopes }
