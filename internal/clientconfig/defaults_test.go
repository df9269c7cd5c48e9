package clientconfig

import (
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/config"
)

func TestImportKeepsAVariablesDefault(t *testing.T) {
	t.Parallel()
	src, err := Parse(ClaudeCode, []byte(`{"mcpServers": {
		"api": {"type": "http", "url": "https://api.example.com/mcp", "headers": {"X-API-Key": "${API_KEY:-dev-key}"}},
		"fs": {"command": "npx", "args": ["-y", "server-filesystem", "."], "env": {"LEVEL": "${LOG_LEVEL:-info}"}}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Convert(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`X-API-Key: "${API_KEY:-dev-key}"`, `LEVEL: "${LOG_LEVEL:-info}"`} {
		if !strings.Contains(string(res.Config), want) {
			t.Errorf("config lacks %s:\n%s", want, res.Config)
		}
	}
	for _, v := range res.Vars {
		if !v.Optional {
			t.Errorf("%s has a default but is not optional", v.Name)
		}
	}
	// mcpwarden starts without the variables: the defaults are used.
	cfg, err := config.Parse(res.Config, ".yaml", "/etc/mcpwarden", nil)
	if err != nil {
		t.Fatalf("the config does not load without the variables: %v", err)
	}
	if got := cfg.Servers["api"].Headers["X-API-Key"]; got != "dev-key" {
		t.Errorf("X-API-Key = %q, want the default", got)
	}
}

func TestASecretInADefaultIsNotCopied(t *testing.T) {
	t.Parallel()
	const token = "ghp_R4nd0mR4nd0mR4nd0mR4nd0mR4nd0m1234"
	src, err := Parse(ClaudeCode, []byte(`{"mcpServers": {
		"gh": {"type": "http", "url": "https://api.example.com/mcp", "headers": {"Authorization": "Bearer ${GH_TOKEN:-`+token+`}"}},
		"fs": {"command": "npx", "env": {"GITHUB_TOKEN": "${GH:-`+token+`}"}}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Convert(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(res.Config), token) {
		t.Errorf("the token in a default was copied:\n%s", res.Config)
	}
}
