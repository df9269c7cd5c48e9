package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gobwas/glob"

	"github.com/mcpwarden/mcpwarden/internal/oauth"
	"github.com/mcpwarden/mcpwarden/rules"
)

// A Profile is what one kind of client may do: the servers it may see and
// its own policy, applied as a third gate after the global and server
// policies. A profile can only narrow what those allow, never widen it.
//
// Over HTTP a client is given a profile by the bearer token it sends: a
// token read from one of TokensEnv, or one whose SHA-256 is in TokenSHA256.
// Plain tokens are never written in the config. Over stdio the profile is
// chosen with `serve --profile NAME`. The client name a client reports in
// initialize is self-chosen, so it never selects a profile.
type Profile struct {
	// Servers are globs over server names; nil means every server. The
	// tools of any other server are hidden from the profile and its calls
	// to them are denied.
	Servers []string `koanf:"servers"`
	// TokensEnv names environment variables, each holding one bearer token
	// that selects this profile.
	TokensEnv []string `koanf:"tokens_env"`
	// TokenSHA256 are hex SHA-256 digests of bearer tokens that select
	// this profile.
	TokenSHA256 []string `koanf:"token_sha256"`
	// Match selects this profile for OAuth identities by their claims
	// (auth.oauth); profiles are tried in name order, the first match wins.
	Match *oauth.Match `koanf:"match"`
	// Policy is the profile's gate.
	Policy rules.PolicySpec `koanf:"policy"`
	// Enforce is enforce or shadow for this profile's requests, unless the
	// server's own enforce says otherwise; "" leaves it to the top-level
	// enforce.
	Enforce rules.Enforce `koanf:"enforce"`
}

// validateProfiles checks the profiles' names, server globs and token
// settings. Rules are checked by rules.Compile.
func (c *Config) validateProfiles() []error {
	var errs []error
	seen := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(c.Profiles)) {
		p := c.Profiles[name]
		key := "profiles." + name
		if !rules.ValidServerName(name) {
			errs = append(errs, fmt.Errorf("%s: profile name must match %s", key, rules.ServerNameGrammar))
		}
		for i, g := range p.Servers {
			if _, err := glob.Compile(g); err != nil {
				errs = append(errs, fmt.Errorf("%s.servers[%d]: %q is not a valid glob: %v", key, i, g, err))
			}
		}
		for i, h := range p.TokenSHA256 {
			b, err := hex.DecodeString(h)
			if err != nil || len(b) != 32 {
				errs = append(errs, fmt.Errorf("%s.token_sha256[%d]: want 64 hex digits (sha256sum of the token)", key, i))
				continue
			}
			h = strings.ToLower(h)
			if other, dup := seen[h]; dup {
				errs = append(errs, fmt.Errorf("%s.token_sha256[%d]: the same token also selects profile %q", key, i, other))
			}
			seen[h] = name
		}
		for i, env := range p.TokensEnv {
			if env == "" {
				errs = append(errs, fmt.Errorf("%s.tokens_env[%d]: empty variable name", key, i))
			}
		}
	}
	return errs
}

// profileSpecs returns each profile's gate, with a deny rule added for
// every configured server the profile may not see, so that hiding and
// refusing them is the rules' one decision.
func (c *Config) profileSpecs() map[string]rules.PolicySpec {
	if len(c.Profiles) == 0 {
		return nil
	}
	out := make(map[string]rules.PolicySpec, len(c.Profiles))
	for name, p := range c.Profiles {
		spec := p.Policy
		if p.Servers != nil {
			spec.Deny = slices.Clone(spec.Deny)
			for _, srv := range c.ServerNames() {
				if !matchesAny(p.Servers, srv) {
					spec.Deny = append(spec.Deny, "mcp:"+srv+":*")
				}
			}
		}
		out[name] = spec
	}
	return out
}

// profileEnforce returns the enforce setting of each profile that has one.
func (c *Config) profileEnforce() map[string]rules.Enforce {
	var out map[string]rules.Enforce
	for name, p := range c.Profiles {
		if p.Enforce == rules.EnforceUnset {
			continue
		}
		if out == nil {
			out = map[string]rules.Enforce{}
		}
		out[name] = p.Enforce
	}
	return out
}

func matchesAny(globs []string, name string) bool {
	for _, g := range globs {
		if m, err := glob.Compile(g); err == nil && m.Match(name) {
			return true
		}
	}
	return false
}

// ProfileTokens reads the profiles' tokens from environ-style lookup and
// returns the SHA-256 digest (hex) of every token with its profile. A
// variable that is unset or empty is an error naming it.
func (c *Config) ProfileTokens(getenv func(string) string) (map[string]string, error) {
	out := map[string]string{}
	var errs []error
	for name, p := range c.Profiles {
		for _, h := range p.TokenSHA256 {
			out[strings.ToLower(h)] = name
		}
		for i, env := range p.TokensEnv {
			tok := getenv(env)
			if tok == "" {
				errs = append(errs, fmt.Errorf("profiles.%s.tokens_env[%d]: environment variable %s is empty or not set", name, i, env))
				continue
			}
			out[TokenDigest(tok)] = name
		}
	}
	return out, errors.Join(errs...)
}

// TokenDigest is the hex SHA-256 of a bearer token, as in token_sha256.
func TokenDigest(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// profilesHaveTokens reports whether every profile can be selected by a
// token, so that an HTTP listener with profiles is authenticated.
func (c *Config) profilesHaveTokens() bool {
	if len(c.Profiles) == 0 {
		return false
	}
	for _, p := range c.Profiles {
		if len(p.TokensEnv) == 0 && len(p.TokenSHA256) == 0 {
			return false
		}
	}
	return true
}
