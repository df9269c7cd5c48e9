package config

import (
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/rules"
)

const withProfiles = `
servers:
  fs: { command: x }
  github: { url: "https://api.example/mcp" }
  web: { command: y }
policy:
  allow: ["mcp:*:*"]
profiles:
  ci:
    servers: [github]
    tokens_env: [CI_TOKEN]
    policy: { deny: ["mcp:github:delete_*"] }
  desk:
    servers: ["{fs,web}"]
    token_sha256: ["` + "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" + `"]
`

func TestProfilesHideServersThroughTheRules(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(withProfiles), ".yaml", "/cfg", nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := rules.Compile(cfg.RulesSpec())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		profile, server, tool string
		want                  rules.Decision
		hidden                bool
	}{
		{"ci", "github", "create_issue", rules.Allow, false},
		{"ci", "github", "delete_repo", rules.Deny, true},
		{"ci", "fs", "read_file", rules.Deny, true},
		{"desk", "fs", "read_file", rules.Allow, false},
		{"desk", "github", "create_issue", rules.Deny, true},
		{"", "github", "delete_repo", rules.Allow, false},
	}
	for _, tt := range tests {
		c := rules.Call{Profile: tt.profile, Server: tt.server, Tool: tt.tool}
		if got := p.Decide(c).Decision; got != tt.want {
			t.Errorf("profile %q %s:%s = %v, want %v", tt.profile, tt.server, tt.tool, got, tt.want)
		}
		if got := p.Hidden(c); got != tt.hidden {
			t.Errorf("profile %q %s:%s hidden = %v, want %v", tt.profile, tt.server, tt.tool, got, tt.hidden)
		}
	}
}

func TestProfileTokens(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(withProfiles), ".yaml", "/cfg", nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cfg.ProfileTokens(func(name string) string {
		if name == "CI_TOKEN" {
			return "s3cret"
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if got[TokenDigest("s3cret")] != "ci" || got[TokenDigest("")] != "desk" {
		t.Errorf("ProfileTokens = %v", got)
	}
	if _, err := cfg.ProfileTokens(func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "profiles.ci.tokens_env[0]") {
		t.Errorf("a missing token variable = %v, want an error naming the key", err)
	}
}

func TestBadProfilesAreRefused(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, data, want string }{
		{"a bad hash", "servers: {fs: {command: x}}\nprofiles: {ci: {token_sha256: [abc]}}\n", "profiles.ci.token_sha256[0]"},
		{"a bad glob", "servers: {fs: {command: x}}\nprofiles: {ci: {servers: [\"[\"]}}\n", "profiles.ci.servers[0]"},
		{"a bad profile rule", "servers: {fs: {command: x}}\nprofiles: {ci: {policy: {deny: [\"nope\"]}}}\n", "profiles.ci"},
		{"an unknown profile key", "servers: {fs: {command: x}}\nprofiles: {ci: {token: x}}\n", "profiles.ci.token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tt.data), ".yaml", "/cfg", nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want it to name %q", err, tt.want)
			}
		})
	}
}
