package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// server-filesystem resolves each path component to a directory entry
// equal to it under NFC, so a name spelled in NFD, or with KELVIN SIGN
// (U+212A, whose NFC is K), reaches the entry spelled otherwise. A deny
// written with one spelling must hold for every spelling.

// unicodeFixture fronts server-filesystem on the sandbox, reads allowed
// and the sandbox's café/ and Keys/ directories denied, each holding a
// secret.
func unicodeFixture(t *testing.T) (*fixture, string) {
	t.Helper()
	f := newFixture(t, "stdio", "  fs:\n"+serverFilesystem("SANDBOX"), `  default: deny
  deny:
    - "mcp:*:*:@path=SANDBOX/café/**"
    - "mcp:*:*:@path=SANDBOX/Keys/**"
  allow:
    - "mcp:fs:read_*"
    - "mcp:fs:get_file_info"
    - "mcp:fs:list_directory"`)
	for _, dir := range []string{"café", "Keys"} { // NFC, as typed
		if err := os.Mkdir(filepath.Join(f.sandbox, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(f.sandbox, dir, "secret.txt"), "UNICODE-SECRET in "+dir)
	}
	writeFile(t, filepath.Join(f.sandbox, "ok.txt"), "fine")
	return f, f.sandbox
}

// refusedSpellings calls read_text_file and read_multiple_files on each
// spelling and wants every call refused without the secret.
func refusedSpellings(t *testing.T, spellings []string) {
	f, sandbox := unicodeFixture(t)
	c := connectStdio(t, f)
	if text, refused := tryTool(t, c, "fs__read_text_file", map[string]any{"path": filepath.Join(sandbox, "ok.txt")}); refused || text != "fine" {
		t.Fatalf("allowed read = %q (refused %v)", clip(text), refused)
	}
	for _, s := range spellings {
		path := filepath.Join(sandbox, s, "secret.txt")
		for _, call := range []struct {
			tool string
			args map[string]any
		}{
			{"read_text_file", map[string]any{"path": path}},
			{"read_file", map[string]any{"path": path}},
			{"read_multiple_files", map[string]any{"paths": []any{filepath.Join(sandbox, "ok.txt"), path}}},
			{"get_file_info", map[string]any{"path": path}},
			{"list_directory", map[string]any{"path": filepath.Join(sandbox, s)}},
		} {
			text, refused := tryTool(t, c, "fs__"+call.tool, call.args)
			// A refusal may name the path; only an answer may list or read it.
			if !refused || strings.Contains(text, "UNICODE-SECRET") {
				t.Errorf("fs__%s %q = %q (refused %v), want refused", call.tool, call.args, clip(text), refused)
			}
		}
	}
}

func TestNFDSpellingReachesDeniedDirLive(t *testing.T) {
	t.Parallel()
	refusedSpellings(t, []string{
		"cafe\u0301", // NFD: e + COMBINING ACUTE ACCENT
		"caf\u00e9",  // NFC, as the rule has it, for reference
	})
}

func TestKelvinSignReachesDeniedDirLive(t *testing.T) {
	t.Parallel()
	refusedSpellings(t, []string{
		"\u212aeys", // KELVIN SIGN
		"Keys",
	})
}
