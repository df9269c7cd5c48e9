package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/tokenstore"
	"github.com/mcpwarden/mcpwarden/rules"
)

// TestUnrelatedMcpwardenVariableDoesNotStopTheLoad is the fourth finding of
// issue 19: MCPWARDEN_CONFIG=… stopped mcpwarden with `unknown key
// "config"`, not saying it came from the environment. A variable that is
// no config key and does not look meant as one is ignored, with a warning
// naming it.
func TestUnrelatedMcpwardenVariableDoesNotStopTheLoad(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"MCPWARDEN_CONFIG=/home/u/mcpwarden.yaml", "MCPWARDEN_HOME=/opt/mcpwarden", "MCPWARDEN_DEBUG_SESSION=1"} {
		cfg, err := Parse([]byte(minimal), ".yaml", "/etc/mcpwarden", []string{v})
		if err != nil {
			t.Errorf("%s stopped the load: %v", v, err)
			continue
		}
		name, _, _ := strings.Cut(v, "=")
		if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], "environment variable "+name+" is ignored") {
			t.Errorf("%s: warnings = %q, want one naming the variable", v, cfg.Warnings)
		}
	}
}

func TestVariableTheConfigNamesIsNotWarnedAbout(t *testing.T) {
	t.Parallel()
	data := minimal + "profiles:\n  ci:\n    servers: [fs]\n    tokens_env: [MCPWARDEN_CI_TOKEN]\n"
	cfg, err := Parse([]byte(data), ".yaml", "/etc/mcpwarden", []string{"MCPWARDEN_CI_TOKEN=t0k3n"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings = %q, want none for a variable the config names", cfg.Warnings)
	}
}

// TestMisspeltSettingFromTheEnvironmentIsNotDropped: a variable that looks
// meant as a key (its first level is one, or is spelt like one) is an error
// naming the variable and the spelling meant, so that a misspelt
// MCPWARDEN_AUDIT__REQUIRED does not silently leave the audit optional.
func TestMisspeltSettingFromTheEnvironmentIsNotDropped(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  string
		want []string
	}{
		{"a misspelt second level", "MCPWARDEN_AUDIT__REQUIRD=true", []string{"environment variable MCPWARDEN_AUDIT__REQUIRD", `"audit.requird" is not a config key`, "did you mean MCPWARDEN_AUDIT__REQUIRED (audit.required)?"}},
		{"a misspelt top level", "MCPWARDEN_LISTN=stdio", []string{"environment variable MCPWARDEN_LISTN", "did you mean MCPWARDEN_LISTEN (listen)?"}},
		{"a misspelt key under a server", "MCPWARDEN_SERVERS__FS__COMAND=node", []string{"environment variable MCPWARDEN_SERVERS__FS__COMAND", "did you mean MCPWARDEN_SERVERS__FS__COMMAND (servers.fs.command)?"}},
		{"an unknown key under a known one", "MCPWARDEN_POLICY__WHATEVER=x", []string{"environment variable MCPWARDEN_POLICY__WHATEVER", `"policy.whatever" is not a config key`}},
		{"a single underscore between levels", "MCPWARDEN_AUDIT_REQUIRED=true", []string{"environment variable MCPWARDEN_AUDIT_REQUIRED", "did you mean MCPWARDEN_AUDIT__REQUIRED"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(minimal), ".yaml", "/etc/mcpwarden", []string{tt.env})
			if err == nil {
				t.Fatalf("%s loaded", tt.env)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestEveryErrorNamesItsSource(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpwarden.yaml")
	if err := os.WriteFile(path, []byte(minimal+"lisen: stdio\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte(minimal), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		env  []string
		want []string
	}{
		{"an unknown key in the file", path, nil, []string{"config " + path + ":6:1: lisen: unknown key; did you mean listen?"}},
		{"a bad value from the environment", good, []string{"MCPWARDEN_LISTEN=0.0.0.0:8765"}, []string{"environment variable MCPWARDEN_LISTEN: listen"}},
		{"a value of the wrong type from the environment", good, []string{"MCPWARDEN_AUDIT__REQUIRED=[a, b]"}, []string{"environment variable MCPWARDEN_AUDIT__REQUIRED"}},
		{"an unknown key inside a value from the environment", good, []string{"MCPWARDEN_AUDIT={pth: x}"}, []string{"environment variable MCPWARDEN_AUDIT: ", "audit.pth: unknown key; did you mean audit.path?"}},
		{"a bad rule from the environment", good, []string{`MCPWARDEN_POLICY__DENY=["mcp:fs:*:path=.env"]`}, []string{"environment variable MCPWARDEN_POLICY__DENY: policy.deny"}},
		// Found by FuzzEnvOverride: a server named with digits was taken
		// for a list's index, servers[0], and the error put on the file.
		{"a server named with digits from the environment", good, []string{"MCPWARDEN_SERVERS__000=0"}, []string{"environment variable MCPWARDEN_SERVERS__000: servers.000: want a section"}},
		{"an unknown key of a server named with digits from the environment", good, []string{"MCPWARDEN_SERVERS__0__COMAND=x"}, []string{"environment variable MCPWARDEN_SERVERS__0__COMAND: ", "(servers.0.command)"}},
		// Found by FuzzEnvOverride: the server "0]" was named
		// servers.0.] and its error put on the file.
		{"a server named with a bracket from the environment", good, []string{"MCPWARDEN_SERVERS__0]=0"}, []string{"environment variable MCPWARDEN_SERVERS__0]: servers.0]: want a section holding keys", "got the number 0"}},
		{"a server named with brackets around a number from the environment", good, []string{"MCPWARDEN_SERVERS__[0]=0"}, []string{"environment variable MCPWARDEN_SERVERS__[0]: servers.[0]: want a section holding keys"}},
		{"a list under a server named with brackets from the environment", good, []string{"MCPWARDEN_SERVERS__]]__ARGS=[1]"}, []string{"environment variable MCPWARDEN_SERVERS__]]__ARGS: servers.]].args[0]: want text for each item", "got the number 1"}},
		{"a list's element from the environment", good, []string{"MCPWARDEN_POLICY__DENY=[1, {a: b}]"}, []string{"environment variable MCPWARDEN_POLICY__DENY: policy.deny[0]: want text"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Load(tt.path, tt.env)
			if err == nil && cfg != nil {
				// The rules are compiled by the caller, which attributes
				// their errors with Attribute.
				err = cfg.Attribute(compileErr(cfg))
			}
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "DESIGN.md") {
				t.Errorf("error %q points to DESIGN.md, which is not in the repository", err)
			}
		})
	}
}

// compileErr compiles cfg's policy as the commands do.
func compileErr(cfg *Config) error {
	_, err := rules.Compile(cfg.RulesSpecIn("/srv"))
	return err
}

// FuzzEnvOverride loads a config with one MCPWARDEN_ variable of any name
// and value: it must load or fail with an error naming the variable, never
// panic.
func FuzzEnvOverride(f *testing.F) {
	f.Add("AUDIT__REQUIRED", "true")
	f.Add("AUDIT_REQUIRED", "true")
	f.Add("SERVERS__FS__COMAND", "x")
	f.Add("CONFIG", "/x")
	f.Add("POLICY__DENY", `["mcp:*:*:@path=**/.env"]`)
	f.Add("SERVERS____", "{a: [1, {b: 2}]}")
	f.Add("RVERS=SE", "x") // the name ends at "=": the error names MCPWARDEN_RVERS
	f.Fuzz(func(t *testing.T, name, value string) {
		entry := EnvPrefix + name + "=" + value
		// The environment holds NAME=VALUE; a name with "=" in it ends at
		// the first one, as it does for the process.
		variable, _, _ := strings.Cut(entry, "=")
		_, err := Parse([]byte(minimal), ".yaml", "/etc/mcpwarden", []string{entry})
		if err != nil && !strings.Contains(err.Error(), variable) && !strings.Contains(err.Error(), "config: ") {
			t.Errorf("error %q names neither the variable nor the config", err)
		}
	})
}

// TestTokenStoreVariablesAreNotWarnedAbout is a finding of issue 35:
// serve warned "MCPWARDEN_TOKEN_KEY is ignored" on every start while the
// upstream token store reads it. The token store's variables are
// mcpwarden's own, not config keys, and load without a warning.
func TestTokenStoreVariablesAreNotWarnedAbout(t *testing.T) {
	t.Parallel()
	for _, v := range []string{tokenstore.KeyEnv + "=AAAA", tokenstore.KeyringEnv + "=off"} {
		cfg, err := Parse([]byte(minimal), ".yaml", "/etc/mcpwarden", []string{v})
		if err != nil {
			t.Errorf("%s stopped the load: %v", v, err)
			continue
		}
		if len(cfg.Warnings) != 0 {
			t.Errorf("%s: warnings = %q, want none: the token store reads it", v, cfg.Warnings)
		}
	}
}

// TestKeyPathTellsAMapsKeyFromAListsIndex: mapstructure brackets both
// ("servers[0]", "limits[0]"); keyPath writes a map's key as a member and
// keeps a list's index, by the values the config holds.
func TestKeyPathTellsAMapsKeyFromAListsIndex(t *testing.T) {
	t.Parallel()
	all := map[string]any{
		"servers": map[string]any{"0": map[string]any{"args": []any{"a", map[string]any{"b": 1}}}, "fs": map[string]any{}, "0]": map[string]any{}, "a]b]": map[string]any{}},
		"policy":  map[string]any{"deny": []any{"x"}},
		"limits":  []any{map[string]any{"window": "1m"}},
	}
	tests := []struct{ key, want string }{
		{"servers[fs].comand", "servers.fs.comand"},
		{"servers[0]", "servers.0"},
		{"servers[0].comand", "servers.0.comand"},
		{"servers[0].args[1].b", "servers.0.args[1].b"},
		{"servers[0].args[7]", "servers.0.args[7]"},
		{"policy.deny[0]", "policy.deny[0]"},
		{"limits[0].window", "limits[0].window"},
		{"servers[a.b].command", "servers.a.b.command"},
		{"nowhere[3].x", "nowhere[3].x"}, // no value: a number is an index
		{"nowhere[x]", "nowhere.x"},
		// A member may hold "]": the bracket closes after the member.
		{"servers[0]]", "servers.0]"},
		{"servers[0]].comand", "servers.0].comand"},
		{"servers[a]b]]", "servers.a]b]"},
		{"servers[a]b]].args[2]", "servers.a]b].args[2]"},
		{"servers[x]]", "servers.x]"}, // no such member: the first "]" closes it
	}
	for _, tt := range tests {
		if got := keyPath(tt.key, all).text; got != tt.want {
			t.Errorf("keyPath(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}
