package config

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestOwnFilesAndLocalServers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpwarden.yaml")
	data := `servers:
  fs: {command: node}
  near: {url: "http://127.0.0.1:9000/mcp"}
  far: {url: "https://mcp.example.com/mcp"}
audit: {path: logs/audit.jsonl}
ask: {approvals: local}
`
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000", "HOME": "/home/u"}
	getenv := func(k string) string { return env[k] }
	token, err := cfg.TokenFilePath(getenv)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(token) != "/run/user/1000/mcpwarden" {
		t.Errorf("token file %s, want it in $XDG_RUNTIME_DIR/mcpwarden", token)
	}
	got := cfg.OwnFiles(getenv)
	audit := filepath.Join(dir, "logs", "audit.jsonl")
	for _, want := range []string{path, audit, audit + ".lock", filepath.Join(dir, "logs", "audit-*"), filepath.Join(dir, DefaultLockFile), token, "/run/user/1000/mcpwarden"} {
		if !slices.Contains(got, want) {
			t.Errorf("own files %v lack %s", got, want)
		}
	}
	spec := cfg.RulesSpecIn(dir)
	for name, want := range map[string]bool{"fs": true, "near": true, "far": false} {
		if spec.Servers[name].Local != want {
			t.Errorf("servers.%s local = %v, want %v", name, spec.Servers[name].Local, want)
		}
	}
	if !slices.Contains(spec.Protected, path) {
		t.Errorf("the rules spec does not protect the config: %v", spec.Protected)
	}
}

func TestStateDirFallbacks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"the runtime dir first", map[string]string{"XDG_RUNTIME_DIR": "/run/user/1", "XDG_STATE_HOME": "/s", "HOME": "/h"}, "/run/user/1/mcpwarden"},
		{"then the state home", map[string]string{"XDG_STATE_HOME": "/s", "HOME": "/h"}, "/s/mcpwarden"},
		{"then the home", map[string]string{"HOME": "/h"}, "/h/.local/state/mcpwarden"},
		{"a relative variable is ignored", map[string]string{"XDG_RUNTIME_DIR": "run", "HOME": "/h"}, "/h/.local/state/mcpwarden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := StateDir(func(k string) string { return tt.env[k] })
			if err != nil || got != tt.want {
				t.Errorf("StateDir = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if _, err := StateDir(func(string) string { return "" }); err == nil {
		t.Error("StateDir without any variable did not fail")
	}
}

func TestMakeStateDirIsPrivate(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a", "mcpwarden")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := MakeStateDir(dir); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(dir); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("state dir: %v, mode %v; want 0700", err, info.Mode().Perm())
	}
}
