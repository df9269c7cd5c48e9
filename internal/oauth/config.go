package oauth

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// A Config makes mcpwarden an OAuth 2.1 resource server (the auth.oauth
// block): it accepts access tokens that Issuer issued for Audience. JWTs
// are verified against the issuer's keys (its JWKS, found through OpenID
// discovery unless JWKSURL is set); other tokens are introspected when
// Introspection is set and refused when it is not.
type Config struct {
	// Issuer is the authorization server's issuer URL, exactly as its
	// tokens' iss claim and its discovery document have it.
	Issuer string `koanf:"issuer"`
	// Audience is this resource's identifier, which a token's aud must
	// contain: usually mcpwarden's public /mcp URL (RFC 8707).
	Audience string `koanf:"audience"`
	// Resource is mcpwarden's public /mcp URL, as clients reach it: the
	// resource of the metadata document, whose URL the 401 challenge
	// names. "" means Audience, which must then be that URL; set it when
	// the issuer puts another identifier (api://…) in aud.
	Resource string `koanf:"resource"`
	// JWKSURL overrides the key set URL discovery would find; with it,
	// no discovery is done.
	JWKSURL string `koanf:"jwks_url"`
	// Introspection, when set, checks opaque tokens at the issuer's RFC
	// 7662 endpoint.
	Introspection *Introspection `koanf:"introspection"`
	// Claims names the claims the identity is read from.
	Claims ClaimNames `koanf:"claims"`
	// RequiredScopes must all be granted to a token; one without them
	// gets 403 insufficient_scope.
	RequiredScopes []string `koanf:"required_scopes"`
	// FallbackProfile is the profile of an authenticated user whom no
	// profile's match selects; "" refuses such a user.
	FallbackProfile string `koanf:"fallback_profile"`
}

// Introspection is how mcpwarden asks the issuer about opaque tokens: it
// authenticates as ClientID with the secret in the environment variable
// ClientSecretEnv (HTTP Basic, RFC 7662 §2.1).
type Introspection struct {
	URL             string `koanf:"url"`
	ClientID        string `koanf:"client_id"`
	ClientSecretEnv string `koanf:"client_secret_env"`
}

// ClaimNames names the claims an Identity is read from. An empty name
// means the default: sub, email and groups.
type ClaimNames struct {
	Subject string `koanf:"subject"`
	Email   string `koanf:"email"`
	Groups  string `koanf:"groups"`
}

// The default claim names.
const (
	DefaultSubjectClaim = "sub"
	DefaultEmailClaim   = "email"
	DefaultGroupsClaim  = "groups"
)

func (n ClaimNames) withDefaults() ClaimNames {
	n.Subject = cmp.Or(n.Subject, DefaultSubjectClaim)
	n.Email = cmp.Or(n.Email, DefaultEmailClaim)
	n.Groups = cmp.Or(n.Groups, DefaultGroupsClaim)
	return n
}

// resource is the public URL of the protected resource.
func (c Config) resource() string { return cmp.Or(c.Resource, c.Audience) }

// keyPrefix is where a Config sits in mcpwarden's config, for errors.
const keyPrefix = "auth.oauth."

// Validate checks the config and returns every problem found, each naming
// its key (auth.oauth.issuer, …). It does no I/O: whether the issuer
// answers is found out when the first token arrives.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(keyPrefix+format, args...)) }
	if err := checkURL(c.Issuer); err != nil {
		add("issuer: %v", err)
	}
	if c.Audience == "" {
		add("audience: required: this resource's identifier as the issuer puts it in aud (usually mcpwarden's public /mcp URL)")
	}
	if c.Resource != "" {
		if err := checkURL(c.Resource); err != nil {
			add("resource: %v", err)
		}
	} else if c.Audience != "" && checkURL(c.Audience) != nil {
		add("resource: required when audience (%q) is not mcpwarden's public /mcp URL: set it to that URL", c.Audience)
	}
	if c.JWKSURL != "" {
		if err := checkURL(c.JWKSURL); err != nil {
			add("jwks_url: %v", err)
		}
	}
	if in := c.Introspection; in != nil {
		if err := checkURL(in.URL); err != nil {
			add("introspection.url: %v", err)
		}
		if in.ClientID == "" {
			add("introspection.client_id: required: the client mcpwarden authenticates as at the introspection endpoint")
		}
		if in.ClientSecretEnv == "" {
			add("introspection.client_secret_env: required: the environment variable holding that client's secret")
		}
	}
	for i, s := range c.RequiredScopes {
		if s == "" || strings.ContainsAny(s, " \"\\") || !printable(s) {
			add("required_scopes[%d]: %q is not a scope (printable, no space, quote or backslash)", i, s)
		}
	}
	return errors.Join(errs...)
}

// checkURL says what is wrong with an absolute http(s) URL, nil if
// nothing is. Whether http is acceptable is the caller's to say.
func checkURL(s string) error {
	if s == "" {
		return errors.New("required")
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return err
	case u.Scheme != "https" && u.Scheme != "http":
		return fmt.Errorf("%q must start with https://", s)
	case u.Host == "":
		return fmt.Errorf("%q has no host", s)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return fmt.Errorf("%q may have no query, fragment or user", s)
	}
	return nil
}

// printable reports whether s has only printable ASCII, as scope tokens
// and header values need (RFC 6749 §3.3).
func printable(s string) bool {
	for i := range len(s) {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
