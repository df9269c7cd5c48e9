package app

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/internal/oauth"
	"github.com/mcpwarden/mcpwarden/proxy/httpguard"
)

// httpIdentity reads who the HTTP listener admits: the global token named
// by auth.bearer_token_env, the profiles' tokens, and OAuth access tokens
// when auth.oauth is set (their profile picked by the profiles' match).
func httpIdentity(cfg *config.Config, logger *slog.Logger) (httpguard.Identity, error) {
	var id httpguard.Identity
	if env := cfg.Auth.BearerTokenEnv; env != "" {
		if id.Token = os.Getenv(env); id.Token == "" {
			return id, fmt.Errorf("auth.bearer_token_env: environment variable %s is empty or not set", env)
		}
	}
	profiles, err := cfg.ProfileTokens(os.Getenv)
	if err != nil {
		return id, err
	}
	id.Profiles = profiles
	if o := cfg.Auth.OAuth; o != nil {
		v, err := oauth.New(*o, &oauth.Options{})
		if err != nil {
			return id, fmt.Errorf("auth.oauth: %w", err)
		}
		m, err := cfg.ProfileMatcher()
		if err != nil {
			return id, err
		}
		id.OAuth = oauth.Guard{Verifier: v, Matcher: m, Log: logger}
	}
	return id, nil
}
