package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoginRefusesServersThatNeedNoLogin(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "mcpwarden.yaml")
	if err := os.WriteFile(cfg, []byte(`
servers:
  local: { command: "true" }
  plain: { url: "https://plain.example/mcp" }
  service: { url: "https://svc.example/mcp", oauth: { client_id: c, client_secret_env: SVC_SECRET, grant: client_credentials } }
policy: { default: deny }
`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, server, want string }{
		{"an unknown server", "nope", `no server "nope"`},
		{"a stdio server", "local", "has no oauth block"},
		{"a remote server without oauth", "plain", "has no oauth block"},
		{"a client credentials server", "service", "no login needed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, _, stderr := run(t, "login", "--config", cfg, tt.server)
			if code != exitUsage || !strings.Contains(stderr, tt.want) {
				t.Fatalf("login %s: exit %d, %q; want %d and %q", tt.server, code, stderr, exitUsage, tt.want)
			}
		})
	}
}
