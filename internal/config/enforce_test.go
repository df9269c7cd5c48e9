package config

import (
	"fmt"
	"strconv"
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
			loadError(t, tc.file, tc.text, tc.want)
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

// FuzzEnforceLoadsOnlyItsTwoValues loads enforce settings of fuzzed text at
// the three places they may be written, quoted or as bare YAML scalars (a
// boolean, a number): a config loads only when each is enforce, shadow or
// empty, and then the most specific one decides; any other value is an
// error naming its key and the two values allowed, never a panic and never
// a mode quietly taken as enforce.
func FuzzEnforceLoadsOnlyItsTwoValues(f *testing.F) {
	f.Add("shadow", "enforce", "", true)
	f.Add("shadwo", "", "shadow", true)
	f.Add("true", "1", "~", false)
	f.Add("Shadow", "[]", "{}", false)
	f.Fuzz(func(t *testing.T, global, server, profile string, quoted bool) {
		value := func(s string) string {
			if quoted {
				return strconv.Quote(s)
			}
			return s
		}
		yaml := fmt.Sprintf("enforce: %s\nservers:\n  fs:\n    command: x\n    enforce: %s\nprofiles:\n  ci:\n    enforce: %s\n", value(global), value(server), value(profile))
		cfg, err := Parse([]byte(yaml), ".yaml", "/cfg", nil)
		valid := func(s string) bool { return s == "" || s == "enforce" || s == "shadow" }
		if err != nil {
			msg := err.Error()
			if quoted && valid(global) && valid(server) && valid(profile) {
				t.Fatalf("valid settings %q %q %q refused: %v", global, server, profile, err)
			}
			if quoted && !strings.Contains(msg, "enforce or shadow") && !strings.Contains(msg, "invalid YAML") {
				t.Fatalf("the error about settings %q %q %q does not say to write enforce or shadow: %v", global, server, profile, err)
			}
			return
		}
		if !quoted {
			return // a bare scalar may read as another text (~ is empty)
		}
		if !valid(global) || !valid(server) || !valid(profile) {
			t.Fatalf("settings %q %q %q loaded", global, server, profile)
		}
		p, err := rules.Compile(cfg.RulesSpec())
		if err != nil {
			t.Fatal(err)
		}
		want := rules.EnforceEnforce
		for _, s := range []string{server, global} {
			if s != "" {
				want = map[string]rules.Enforce{"enforce": rules.EnforceEnforce, "shadow": rules.EnforceShadow}[s]
				break
			}
		}
		if got := p.Enforcement("fs", ""); got != want {
			t.Fatalf("Enforcement of fs for no profile = %v, want %v:\n%s", got, want, yaml)
		}
	})
}
