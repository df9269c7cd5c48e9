package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/oauth"
)

const withOAuth = `
servers:
  fs: { command: x }
  github: { url: "https://api.example/mcp" }
auth:
  oauth:
    issuer: https://idp.corp.example
    audience: https://mcpwarden.corp.example/mcp
    required_scopes: [mcp]
    claims: { groups: roles }
    introspection: { url: "https://idp.corp.example/introspect", client_id: mcpwarden, client_secret_env: IDP_SECRET }
    fallback_profile: guest
profiles:
  eng:
    match: { groups: [eng, "eng-*"] }
  ops:
    match: { groups: [ops], email: ["*@corp.example"] }
  guest:
    servers: [github]
`

func TestOAuthBlockAndMatchesLoad(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(withOAuth), ".yaml", "/cfg", nil)
	if err != nil {
		t.Fatal(err)
	}
	o := cfg.Auth.OAuth
	if o == nil || o.Issuer != "https://idp.corp.example" || o.Audience != "https://mcpwarden.corp.example/mcp" ||
		o.Claims.Groups != "roles" || o.Introspection == nil || o.Introspection.ClientSecretEnv != "IDP_SECRET" ||
		!slices.Equal(o.RequiredScopes, []string{"mcp"}) || o.FallbackProfile != "guest" {
		t.Fatalf("auth.oauth = %+v", o)
	}
	m, err := cfg.ProfileMatcher()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		id   oauth.Identity
		want string
	}{
		{oauth.Identity{Subject: "a", Groups: []string{"eng-web"}}, "eng"},
		{oauth.Identity{Subject: "b", Groups: []string{"ops"}, Email: "b@corp.example"}, "ops"},
		{oauth.Identity{Subject: "c", Groups: []string{"ops"}}, "guest"},
	}
	for _, tt := range tests {
		if got, ok := m.Profile(tt.id); !ok || got != tt.want {
			t.Errorf("Profile(%+v) = %q, %v; want %q", tt.id, got, ok, tt.want)
		}
	}
}

func TestOAuthKeysComeFromTheEnvironment(t *testing.T) {
	t.Parallel()
	environ := []string{
		"MCPWARDEN_AUTH__OAUTH__ISSUER=https://idp.example",
		"MCPWARDEN_AUTH__OAUTH__AUDIENCE=https://h.example/mcp",
	}
	cfg, err := Parse([]byte(minimal), ".yaml", "/cfg", environ)
	if err != nil {
		t.Fatal(err)
	}
	if o := cfg.Auth.OAuth; o == nil || o.Issuer != "https://idp.example" || o.Audience != "https://h.example/mcp" {
		t.Errorf("auth.oauth = %+v, want the environment's values", o)
	}
}

func TestBadOAuthIsRefusedNamingTheKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, yaml, want string
	}{
		{"An issuer over plain http to another host is refused.",
			"auth: { oauth: { issuer: http://idp.example, audience: https://h.example/mcp } }", "auth.oauth.issuer: \"http://idp.example\" must be https"},
		{"An api:// audience without the public resource URL is refused.",
			"auth: { oauth: { issuer: https://i.example, audience: \"api://mcpwarden\" } }", "auth.oauth.resource: required when audience"},
		{"A missing audience is refused.",
			"auth: { oauth: { issuer: https://idp.example } }", "auth.oauth.audience: required"},
		{"A missing issuer is refused.",
			"auth: { oauth: { audience: https://h.example/mcp } }", "auth.oauth.issuer: required"},
		{"Introspection without its secret variable is refused.",
			"auth: { oauth: { issuer: https://i.example, audience: https://h.example/mcp, introspection: { url: https://i.example/x, client_id: c } } }", "auth.oauth.introspection.client_secret_env: required"},
		{"A fallback profile that does not exist is refused.",
			"auth: { oauth: { issuer: https://i.example, audience: https://h.example/mcp, fallback_profile: nobody } }", "auth.oauth.fallback_profile: \"nobody\" is not a profile"},
		{"A match without auth.oauth is refused.",
			"profiles: { p: { match: { groups: [eng] } } }", "profiles.p.match: selects profiles for OAuth identities, so it needs auth.oauth"},
		{"An empty match is refused.",
			"auth: { oauth: { issuer: https://i.example, audience: https://h.example/mcp } }\nprofiles: { p: { match: {} } }", "profiles.p.match: set at least one"},
		{"A bad glob in a match is refused.",
			"auth: { oauth: { issuer: https://i.example, audience: https://h.example/mcp } }\nprofiles: { p: { match: { email: [\"[x\"] } } }", "profiles.p.match.email[0]"},
		{"A misspelt key in the block is refused.",
			"auth: { oauth: { issuer: https://i.example, audience: https://h.example/mcp, isuer: x } }", "auth.oauth.isuer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(minimal+tt.yaml+"\n"), ".yaml", "/cfg", nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to hold %q", err, tt.want)
			}
		})
	}
}
