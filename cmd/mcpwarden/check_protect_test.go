package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckShowsSelfProtectionOfWhatRoutesThroughMcpwarden(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpwarden.yaml")
	cfg := "servers:\n  fs:\n    command: \"true\"\npolicy:\n  default: allow\n  allow: [\"mcp:fs:*\"]\naudit: { sink: none }\n"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{".mcp.json", ".claude/settings.json", "/proc/self/cwd/mcpwarden.yaml", "/dev/fd/../cwd/mcpwarden.yaml", exe} {
		code, out, errOut := run(t, "check", "--config", path, "mcp:fs:write_file", `{"path": "`+p+`"}`)
		if code != exitDeny || !strings.Contains(out, "builtin:self-protection") {
			t.Errorf("check of a write to %q exited %d with\n%s%s\nwant %d by builtin:self-protection", p, code, out, errOut, exitDeny)
		}
	}
}
