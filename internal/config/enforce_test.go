package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/rules"
)

func TestAWrongEnforceValueNamesItsPlaceAndTheTwoValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file, text string
		want             []string
	}{
		{"a misspelt top-level enforce", "c.yaml", "servers:\n  fs:\n    command: npx\nenforce: shadwo\n",
			[]string{"c.yaml:4:1: enforce:", `"shadwo"`, "enforce or shadow"}},
		{"a boolean server enforce", "c.yaml", "servers:\n  fs:\n    command: npx\n    enforce: true\n",
			[]string{"c.yaml:4:5: servers.fs.enforce:", "enforce or shadow"}},
		{"a profile enforce in JSON", "c.json", "{\"servers\": {\"fs\": {\"command\": \"npx\"}},\n \"profiles\": {\"ci\": {\"enforce\": \"warn\"}}}",
			[]string{"c.json:2:", "profiles.ci.enforce:", `"warn"`, "enforce or shadow"}},
		{"enforce put under a policy", "c.yaml", "servers:\n  fs:\n    command: npx\npolicy:\n  enforce: shadow\n",
			[]string{"c.yaml:5:3: policy.enforce: unknown key"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), tc.file)
			if err := os.WriteFile(path, []byte(tc.text), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path, nil)
			if err == nil {
				t.Fatal("Load succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
		})
	}
}

func TestEnforceReachesTheRules(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(`
enforce: shadow
servers:
  fs: {command: npx, enforce: enforce}
  git: {command: npx}
  web: {command: npx}
profiles:
  ci: {enforce: enforce, servers: [git, web]}
  dev: {}
`), ".yaml", t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := rules.Compile(cfg.RulesSpec())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name            string
		server, profile string
		want            rules.Enforce
	}{
		{name: "the top-level shadow", server: "git", want: rules.EnforceShadow},
		{name: "a server's enforce over it", server: "fs", want: rules.EnforceEnforce},
		{name: "a profile's enforce over it", server: "git", profile: "ci", want: rules.EnforceEnforce},
		{name: "a profile without a setting takes the top-level one", server: "web", profile: "dev", want: rules.EnforceShadow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := p.Enforcement(tt.server, tt.profile); got != tt.want {
				t.Errorf("Enforcement(%q, %q) = %v, want %v", tt.server, tt.profile, got, tt.want)
			}
		})
	}
}
