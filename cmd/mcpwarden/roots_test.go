package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCheckReadsRelativePathAgainstTheDirectoryAServerIsGiven: check
// decides as serve does, so a relative path to a stdio server without cwd
// is read against the directory it is given too (where server-filesystem
// resolves it), not only against where mcpwarden runs.
func TestCheckReadsRelativePathAgainstTheDirectoryAServerIsGiven(t *testing.T) {
	t.Parallel()
	served := t.TempDir()
	cfg := "servers:\n  fs:\n    command: server-filesystem\n    args: [" + quoteYAML(served) + "]\n" +
		"policy:\n  allow: [\"mcp:fs:*\"]\n  deny: [\"mcp:*:*:@path=" + served + "/private/**\"]\naudit: { sink: none }\n"
	path := filepath.Join(t.TempDir(), "mcpwarden.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     string
		wantCode int
	}{
		{"a relative path into the denied directory", `{"path":"private/s.txt"}`, exitDeny},
		{"a relative path array into it", `{"paths":["ok.txt","./private/s.txt"]}`, exitDeny},
		{"a relative path elsewhere", `{"path":"ok.txt"}`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := run(t, "check", "--config", path, "mcp:fs:read_text_file", tt.args)
			if code != tt.wantCode {
				t.Errorf("check %s exited %d, want %d:\n%s%s", tt.args, code, tt.wantCode, out, errOut)
			}
		})
	}
}
