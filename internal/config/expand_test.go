package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestVariableDefaultsAreKept(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		value   string
		environ []string
		want    string
	}{
		{"an unset variable takes its default", "${LEVEL:-info}", nil, "info"},
		{"an empty variable takes its default", "${LEVEL:-info}", []string{"LEVEL="}, "info"},
		{"a set variable wins over its default", "${LEVEL:-info}", []string{"LEVEL=debug"}, "debug"},
		{"an empty default is a default", "x${LEVEL:-}y", nil, "xy"},
		{"a default may hold colons and slashes", "${URL:-http://127.0.0.1:9000/mcp}", nil, "http://127.0.0.1:9000/mcp"},
		{"a plain reference next to a default", "${A}-${B:-b}", []string{"A=a"}, "a-b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			data := "servers:\n  fs:\n    command: npx\n    env: { V: " + quote(tt.value) + " }\n"
			cfg, err := Parse([]byte(data), ".yaml", "/etc/mcpwarden", tt.environ)
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Servers["fs"].Env["V"]; got != tt.want {
				t.Errorf("V = %q, want %q", got, tt.want)
			}
		})
	}
}

func quote(s string) string { return `"` + s + `"` }

func TestOfflineLoadRunsWithoutTheServersSecrets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpwarden.yaml")
	data := "servers:\n  gh:\n    url: https://example.com/mcp\n    headers: { Authorization: \"Bearer ${GH_TOKEN}\" }\n  fs:\n    command: npx\n    env: { TOKEN: \"${FS_TOKEN}\", LEVEL: \"${LEVEL:-info}\" }\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path, nil); err == nil || !strings.Contains(err.Error(), "GH_TOKEN") {
		t.Fatalf("Load without GH_TOKEN: err = %v, want it to name GH_TOKEN (serve needs it)", err)
	}
	cfg, err := LoadOffline(path, []string{"FS_TOKEN=fs"})
	if err != nil {
		t.Fatalf("LoadOffline without GH_TOKEN: %v", err)
	}
	if got := cfg.Servers["gh"].Headers["Authorization"]; got != "Bearer ${GH_TOKEN}" {
		t.Errorf("Authorization = %q, want the reference kept as written", got)
	}
	if got := cfg.Servers["fs"].Env; got["TOKEN"] != "fs" || got["LEVEL"] != "info" {
		t.Errorf("fs env = %v, want the set variable and the default expanded", got)
	}
	joined := strings.Join(cfg.Warnings, "\n")
	if !strings.Contains(joined, "servers.gh.headers.Authorization") || !strings.Contains(joined, "GH_TOKEN") {
		t.Errorf("warnings = %q, want one naming the key and the unset variable", cfg.Warnings)
	}
}
