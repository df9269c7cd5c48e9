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

// TestCheckFollowsLinksToOwnFilesAsTheProxyDoes: on a server on this
// machine without resolve_symlinks, the proxy still denies a path whose
// link leads to mcpwarden's own files (self-protection on disk); check,
// which says what the proxy would do, said ALLOW.
func TestCheckFollowsLinksToOwnFilesAsTheProxyDoes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpwarden.yaml")
	cfg := "servers:\n  fs:\n    command: \"true\"\n    resolve_symlinks: false\npolicy:\n  default: allow\n  allow: [\"mcp:fs:*\"]\naudit: { sink: none }\n"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "check", "--config", path, "mcp:fs:read_file", `{"path": "`+link+`"}`)
	if code != exitDeny || !strings.Contains(out, "builtin:self-protection") || !strings.Contains(out, "symlinks followed") {
		t.Errorf("check of a read through a link to the config exited %d with\n%s%s\nwant %d by builtin:self-protection with symlinks followed", code, out, errOut, exitDeny)
	}
}
