package config

import (
	"strings"
	"testing"
)

func TestPathsCaseInsensitive(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, value string
		goos        string
		want        bool
	}{
		{"unset on linux is false", "", "linux", false},
		{"unset on darwin is true", "", "darwin", true},
		{"auto on windows is true", "auto", "windows", true},
		{"a YAML true", "true", "linux", true},
		{"a YAML false on darwin", "false", "darwin", false},
		{"a quoted true", `"true"`, "linux", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			data := minimal
			if tt.value != "" {
				data += "paths_case_insensitive: " + tt.value + "\n"
			}
			cfg, err := Parse([]byte(data), ".yaml", "/etc/mcpwarden", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.PathsCaseInsensitive.Fold(tt.goos); got != tt.want {
				t.Errorf("paths_case_insensitive %s on %s folds %v, want %v", tt.value, tt.goos, got, tt.want)
			}
		})
	}
}

func TestRuleKeyListsAreValidated(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, data, wantErr string
	}{
		{"a bad case rule", "paths_case_insensitive: maybe\n", "paths_case_insensitive"},
		{"a dotted url key", "url_keys: [a.b]\n", "url_keys[0]"},
		{"a command key with a bracket", "command_keys: [cmd, \"x[]\"]\n", "command_keys[1]"},
		{"a path key naming a fact", "path_keys: [\"@path\"]\n", "path_keys[0]"},
		{"a relative path home", "servers: { web: { url: \"https://x.test/mcp\", path_home: home } }\n", "servers.web.path_home"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			data := minimal + tt.data
			if strings.HasPrefix(tt.data, "servers:") {
				data = tt.data
			}
			_, err := Parse([]byte(data), ".yaml", "/etc/mcpwarden", nil)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Parse error = %v, want one naming %s", err, tt.wantErr)
			}
		})
	}
}

func TestRulesSpecCarriesPathSettings(t *testing.T) {
	t.Parallel()
	data := minimal + `
url_keys: [site]
command_keys: [line]
paths_case_insensitive: true
`
	cfg, err := Parse([]byte(data), ".yaml", "/etc/mcpwarden", nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Servers["fs"] = Server{Command: "x", Env: map[string]string{"HOME": "/home/fs"}}
	cfg.Servers["web"] = Server{URL: "https://x.test/mcp", PathHome: "/home/web"}
	cfg.Servers["api"] = Server{URL: "https://x.test/mcp"}
	spec := cfg.RulesSpecIn("/work")
	if !spec.PathsCaseInsensitive || len(spec.URLKeys) != 1 || len(spec.CommandKeys) != 1 {
		t.Errorf("spec = %+v, want the path settings carried", spec)
	}
	for name, want := range map[string]string{"fs": "/home/fs", "web": "/home/web", "api": ""} {
		if got := spec.Servers[name].Home; got != want {
			t.Errorf("servers.%s home = %q, want %q", name, got, want)
		}
	}
}
