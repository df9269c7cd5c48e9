package config

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"

	"github.com/mcpwarden/mcpwarden/internal/hostport"
	"github.com/mcpwarden/mcpwarden/internal/oauth"
)

// validateOAuth checks auth.oauth and the profiles' match blocks: the
// block itself (oauth.Config.Validate), that the issuer and the other URLs
// it names are https (http only on a loopback host), that the fallback
// profile exists, and that a match is only set where auth.oauth is and
// compiles.
func (c *Config) validateOAuth() []error {
	var errs []error
	o := c.Auth.OAuth
	if o == nil {
		for _, name := range slices.Sorted(maps.Keys(c.Profiles)) {
			if c.Profiles[name].Match != nil {
				errs = append(errs, fmt.Errorf("profiles.%s.match: selects profiles for OAuth identities, so it needs auth.oauth", name))
			}
		}
		return errs
	}
	if err := o.Validate(); err != nil {
		errs = append(errs, err)
	}
	urls := []struct{ key, value string }{{"issuer", o.Issuer}, {"jwks_url", o.JWKSURL}}
	if o.Introspection != nil {
		urls = append(urls, struct{ key, value string }{"introspection.url", o.Introspection.URL})
	}
	for _, u := range urls {
		if p, err := url.Parse(u.value); err == nil && p.Scheme == "http" && !hostport.IsLoopback(p.Hostname()) {
			errs = append(errs, fmt.Errorf("auth.oauth.%s: %q must be https (http only on a loopback host): tokens and keys must not travel in the clear", u.key, u.value))
		}
	}
	if f := o.FallbackProfile; f != "" {
		if _, ok := c.Profiles[f]; !ok {
			errs = append(errs, fmt.Errorf("auth.oauth.fallback_profile: %q is not a profile: name one under profiles:, or drop it to refuse identities no profile matches", f))
		}
	}
	if _, err := c.ProfileMatcher(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// ProfileMatches are the profiles' match blocks in the order they are
// tried: by profile name.
func (c *Config) ProfileMatches() []oauth.ProfileMatch {
	var out []oauth.ProfileMatch
	for _, name := range slices.Sorted(maps.Keys(c.Profiles)) {
		if m := c.Profiles[name].Match; m != nil {
			out = append(out, oauth.ProfileMatch{Profile: name, Match: *m})
		}
	}
	return out
}

// ProfileMatcher compiles the profiles' matches and auth.oauth's fallback
// profile into the matcher that picks an OAuth identity's profile. Without
// auth.oauth it is an error.
func (c *Config) ProfileMatcher() (*oauth.Matcher, error) {
	if c.Auth.OAuth == nil {
		return nil, errors.New("auth.oauth: not set, so no profile is selected by claims")
	}
	return oauth.NewMatcher(c.ProfileMatches(), c.Auth.OAuth.FallbackProfile)
}
