package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRelativePathReachesDeniedDirLive: server-filesystem joins a relative
// path to its first allowed directory (its argument), while mcpwarden joined
// it to the server's cwd, or where mcpwarden runs when none is set. With no
// cwd the two differed, and `private/s.txt` passed a deny on SANDBOX/private
// as a path under mcpwarden's directory, then was read from SANDBOX. A
// relative path is now also read against every directory a stdio server is
// given as an argument, and each reading's physical form is decided too.
func TestRelativePathReachesDeniedDirLive(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "stdio", "  fs:\n"+serverFilesystem("SANDBOX"), `  default: deny
  deny:
    - "mcp:*:*:@path=SANDBOX/private/**"
  allow:
    - "mcp:fs:read_*"`)
	if err := os.Mkdir(filepath.Join(f.sandbox, "private"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(f.sandbox, "private", "s.txt"), "PRIVATE-SECRET")
	writeFile(t, filepath.Join(f.sandbox, "ok.txt"), "PUBLIC")
	// An innocent name in the served directory linking into the denied one:
	// only the reading against the served directory resolves to it.
	if err := os.Symlink(filepath.Join("private", "s.txt"), filepath.Join(f.sandbox, "innocent.txt")); err != nil {
		t.Fatal(err)
	}
	c := connectStdio(t, f)
	for _, path := range []string{"private/s.txt", "./private/s.txt", "x/../private/s.txt", "innocent.txt"} {
		if text, refused := tryTool(t, c, "fs__read_text_file", map[string]any{"path": path}); !refused || strings.Contains(text, "PRIVATE-SECRET") {
			t.Errorf("read_text_file %q = %q (refused %v), want refused", path, clip(text), refused)
		}
	}
	text, refused := tryTool(t, c, "fs__read_multiple_files", map[string]any{"paths": []any{"ok.txt", "private/s.txt"}})
	if !refused || strings.Contains(text, "PRIVATE-SECRET") {
		t.Errorf("read_multiple_files = %q (refused %v), want refused", clip(text), refused)
	}
	if text, refused := tryTool(t, c, "fs__read_text_file", map[string]any{"path": "ok.txt"}); refused || !strings.Contains(text, "PUBLIC") {
		t.Errorf("read_text_file ok.txt = %q (refused %v), want the file", clip(text), refused)
	}
}

// TestRelativePathReachesDeniedDirOfSecondDirectoryLive: server-filesystem
// given two directories resolves a relative path against the first one the
// result lands inside, whatever its cwd: `private/s.txt` in the first, and
// a path climbing from the first into the second's `keys`. With no cwd, or
// with cwd set to the second directory, the rules once read them against
// the cwd only and let them past the denies; every directory argument is a
// root now. A relative path is allowed by a rule on the two directories only
// when every reading is in one of them.
func TestRelativePathReachesDeniedDirOfSecondDirectoryLive(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cwd  string // SANDBOX and SECOND are replaced
		// listAllowed: list_directory "." is allowed, its every reading
		// being one of the two directories (without a cwd, one is where
		// mcpwarden runs).
		listAllowed bool
	}{
		{"no cwd", "", false},
		{"cwd set to the second directory", "SECOND", true},
		{"cwd set to the first directory", "SANDBOX", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			second := filepath.Join(t.TempDir(), "second")
			if err := os.MkdirAll(filepath.Join(second, "keys"), 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(second, "keys", "k.txt"), "SECOND-KEY")
			servers := "  fs:\n" + serverFilesystemDirs("SANDBOX", second)
			if tt.cwd != "" {
				servers += "\n    cwd: " + strings.ReplaceAll(tt.cwd, "SECOND", second)
			}
			f := newFixture(t, "stdio", servers, `  default: deny
  deny:
    - "mcp:*:*:@path=SANDBOX/private/**"
    - "mcp:*:*:@path=`+second+`/keys/**"
  allow:
    - "mcp:fs:read_*"
    - "mcp:fs:list_directory:@path={SANDBOX,`+second+`}/**"`)
			if err := os.Mkdir(filepath.Join(f.sandbox, "private"), 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(f.sandbox, "private", "s.txt"), "PRIVATE-FIRST")
			writeFile(t, filepath.Join(f.sandbox, "ok.txt"), "PUBLIC")
			rel, err := filepath.Rel(f.sandbox, filepath.Join(second, "keys", "k.txt"))
			if err != nil {
				t.Fatal(err)
			}
			c := connectStdio(t, f)
			for _, path := range []string{"private/s.txt", "./private/s.txt", rel, "x/../" + rel} {
				if text, refused := tryTool(t, c, "fs__read_text_file", map[string]any{"path": path}); !refused || strings.Contains(text, "PRIVATE-FIRST") || strings.Contains(text, "SECOND-KEY") {
					t.Errorf("read_text_file %q = %q (refused %v), want refused", path, clip(text), refused)
				}
			}
			if text, refused := tryTool(t, c, "fs__read_text_file", map[string]any{"path": "ok.txt"}); refused || !strings.Contains(text, "PUBLIC") {
				t.Errorf("read_text_file ok.txt = %q (refused %v), want the file", clip(text), refused)
			}
			text, refused := tryTool(t, c, "fs__list_directory", map[string]any{"path": "."})
			if got := !refused && strings.Contains(text, "ok.txt"); got != tt.listAllowed {
				t.Errorf("list_directory . = %q (refused %v), want listed %v", clip(text), refused, tt.listAllowed)
			}
		})
	}
}

// serverFilesystemDirs is serverFilesystem serving every directory of dirs.
func serverFilesystemDirs(dirs ...string) string {
	args := []string{fmt.Sprintf("%q", filepath.Join(npmMods, "@modelcontextprotocol", "server-filesystem", "dist", "index.js"))}
	for _, d := range dirs {
		args = append(args, fmt.Sprintf("%q", d))
	}
	return "    command: node\n    args: [" + strings.Join(args, ", ") + "]"
}
