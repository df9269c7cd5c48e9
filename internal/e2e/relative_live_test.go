package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRelativePathReachesDeniedDirLive: server-filesystem joins a relative
// path to its first allowed directory (its argument), while mcpwarden joins
// it to the server's cwd, or where mcpwarden runs when none is set. With no
// cwd the two differ, and `private/s.txt` passes a deny on SANDBOX/private
// as a path under mcpwarden's directory, then is read from SANDBOX. The
// examples set cwd to the served directory, and validate warns of a config
// that does not; the rules themselves are still open to it.
func TestRelativePathReachesDeniedDirLive(t *testing.T) {
	t.Parallel()
	t.Skip("open (found by issue 16's helper): a stdio server's relative paths are decided against its cwd only; server-filesystem reads them against its directory argument")
	f := newFixture(t, "stdio", "  fs:\n"+serverFilesystem("SANDBOX"), `  default: deny
  deny:
    - "mcp:*:*:@path=SANDBOX/private/**"
  allow:
    - "mcp:fs:read_*"`)
	if err := os.Mkdir(filepath.Join(f.sandbox, "private"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(f.sandbox, "private", "s.txt"), "PRIVATE-SECRET")
	c := connectStdio(t, f)
	for _, path := range []string{"private/s.txt", "./private/s.txt", "x/../private/s.txt"} {
		if text, refused := tryTool(t, c, "fs__read_text_file", map[string]any{"path": path}); !refused || strings.Contains(text, "PRIVATE-SECRET") {
			t.Errorf("read_text_file %q = %q (refused %v), want refused", path, clip(text), refused)
		}
	}
}
