package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The attacks of issue 16 against a Go server: encoding/json binds keys
// case-insensitively (with Unicode simple folding: ſ is s, K is k) and the
// last of two folded keys wins, and the kernel applies `..` after following
// a symlink. Each attack is tried with goserver as a stdio child and as a
// streamable HTTP server.

func TestFoldedKeyDoesNotReachGoServer(t *testing.T) {
	t.Parallel()
	const policy = `  default: deny
  deny:
    - "mcp:go:read:path=/etc/**"
    - "mcp:go:read:path=OUTSIDE/**"
  allow:
    - "mcp:go:read"`
	eachGoUpstream(t, policy, func(t *testing.T, w goWorld) {
		secret := filepath.Join(w.outside, "secret.txt")
		writeFile(t, secret, "top secret")
		ok := filepath.Join(w.app, "ok.txt")
		writeFile(t, ok, "fine to read")

		// The allow works, so a refusal below is the deny's.
		if text, refused := tryTool(t, w.c, "go__read", map[string]any{"path": ok}); refused || text != "fine to read" {
			t.Fatalf("allowed read = %q (refused %v), want the file", text, refused)
		}
		tests := []struct {
			name string
			args map[string]any
			leak string
		}{
			{"an upper-case key alone", map[string]any{"PATH": "/etc/passwd"}, "root:"},
			{"a title-case key alone", map[string]any{"Path": "/etc/passwd"}, "root:"},
			{"a mixed-case key alone on a stand-in", map[string]any{"pAtH": secret}, "top secret"},
			{"a folded key beside the real one", map[string]any{"path": ok, "PATH": secret}, "top secret"},
			{"a folded key beside the real one, sorted first", map[string]any{"path": secret, "PATH": ok}, "top secret"},
		}
		for _, tt := range tests {
			text, refused := tryTool(t, w.c, "go__read", tt.args)
			if !refused || strings.Contains(text, tt.leak) {
				t.Errorf("%s: go__read %v = %q (refused %v), want refused without the file", tt.name, tt.args, clip(text), refused)
			}
		}
	})
}

func TestLongSFoldedKeyDoesNotMoveShadow(t *testing.T) {
	t.Parallel()
	// OUTSIDE/etc stands in for /etc.
	const policy = `  default: deny
  deny:
    - "mcp:go:*:source=OUTSIDE/**"
    - "mcp:go:*:destination=OUTSIDE/**"
    - "mcp:go:*:path=OUTSIDE/**"
  allow:
    - "mcp:go:move:source=APP/**:destination=APP/**"`
	eachGoUpstream(t, policy, func(t *testing.T, w goWorld) {
		etc := filepath.Join(w.outside, "etc")
		if err := os.Mkdir(etc, 0o755); err != nil {
			t.Fatal(err)
		}
		shadow := filepath.Join(etc, "shadow")
		const hashes = "root:$6$stand-in-hash:19000:0:99999:7:::\n"
		writeFile(t, shadow, hashes)
		a := filepath.Join(w.app, "a.txt")
		writeFile(t, a, "a")

		tests := []struct {
			name string
			args map[string]any
		}{
			// U+017F LATIN SMALL LETTER LONG S folds to s; sorted, ſource
			// comes after source and wins in encoding/json.
			{"the long s beside source", map[string]any{"source": a, "ſource": shadow, "destination": filepath.Join(w.app, "x")}},
			{"the long s alone", map[string]any{"ſource": shadow, "destination": filepath.Join(w.app, "y")}},
			{"an upper-case key beside source", map[string]any{"source": a, "SOURCE": shadow, "destination": filepath.Join(w.app, "z")}},
			// The same trick on the destination writes outside instead.
			{"the long s in destination", map[string]any{"source": a, "destination": filepath.Join(w.app, "w"), "deſtination": filepath.Join(etc, "planted")}},
		}
		for _, tt := range tests {
			text, refused := tryTool(t, w.c, "go__move", tt.args)
			if !refused {
				t.Errorf("%s: go__move %v = %q, was not refused", tt.name, tt.args, clip(text))
			}
			if !fileHas(shadow, hashes) {
				t.Fatalf("%s: the stand-in for /etc/shadow was moved away", tt.name)
			}
			if _, err := os.Stat(filepath.Join(etc, "planted")); err == nil {
				t.Fatalf("%s: a file was moved into the stand-in for /etc", tt.name)
			}
		}
		if !fileHas(a, "a") {
			t.Errorf("a.txt was moved by a refused call")
		}
		// The allow works, so the refusals above are the proxy's.
		x := filepath.Join(w.app, "x")
		if text, refused := tryTool(t, w.c, "go__move", map[string]any{"source": a, "destination": x}); refused || !fileHas(x, "a") {
			t.Errorf("allowed move = %q (refused %v), want a.txt moved to x", text, refused)
		}
	})
}

func TestSymlinkDotDotDoesNotEscapeAllow(t *testing.T) {
	t.Parallel()
	const policy = `  default: deny
  allow:
    - "mcp:go:*:path=APP/**"`
	eachGoUpstream(t, policy, func(t *testing.T, w goWorld) {
		// app/l -> outside/inner, so app/l/.. is outside, not app.
		inner := filepath.Join(w.outside, "inner")
		if err := os.Mkdir(inner, 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(w.outside, "secret.txt"), "top secret")
		if err := os.Symlink(inner, filepath.Join(w.app, "l")); err != nil {
			t.Fatal(err)
		}
		// app/l1 -> app/l2 -> outside/inner: a chain that starts inside.
		if err := os.Symlink(filepath.Join(w.app, "l2"), filepath.Join(w.app, "l1")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(inner, filepath.Join(w.app, "l2")); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(w.app, "ok.txt"), "fine to read")

		if text, refused := tryTool(t, w.c, "go__read", map[string]any{"path": filepath.Join(w.app, "ok.txt")}); refused || text != "fine to read" {
			t.Fatalf("allowed read = %q (refused %v), want the file", text, refused)
		}
		for _, path := range []string{
			filepath.Join(w.app, "l") + "/../secret.txt",
			filepath.Join(w.app, "l1") + "/../secret.txt",
			filepath.Join(w.app, "l") + "/./../secret.txt",
			filepath.Join(w.app, "ok.txt") + "/../l/../secret.txt",
		} {
			if text, refused := tryTool(t, w.c, "go__read", map[string]any{"path": path}); !refused || strings.Contains(text, "top secret") {
				t.Errorf("go__read %s = %q (refused %v), want refused without the secret", path, text, refused)
			}
		}
		// A write the same way would plant a file outside.
		planted := filepath.Join(w.outside, "planted.txt")
		path := filepath.Join(w.app, "l") + "/../planted.txt"
		if text, refused := tryTool(t, w.c, "go__write", map[string]any{"path": path, "content": "x"}); !refused {
			t.Errorf("go__write %s = %q, was not refused", path, text)
		}
		if _, err := os.Stat(planted); err == nil {
			t.Errorf("a write through l/.. created %s", planted)
		}
	})
}

func TestNULInPathDoesNotReachGoServer(t *testing.T) {
	t.Parallel()
	const policy = `  default: deny
  allow:
    - "mcp:go:*:path=APP/**"`
	eachGoUpstream(t, policy, func(t *testing.T, w goWorld) {
		writeFile(t, filepath.Join(w.app, "ok.txt"), "fine to read")
		// Cleaned, the value is inside app; a C-string server stops at the
		// NUL and opens what comes before it.
		for _, args := range []map[string]any{
			{"path": filepath.Join(w.app, "ok.txt") + "\x00/../../outside/secret.txt"},
			{"path": filepath.Join(w.app, "ok.txt"), "n\x00te": "x"},
		} {
			text, refused := tryTool(t, w.c, "go__read", args)
			if !refused || !strings.Contains(text, "NUL") {
				t.Errorf("go__read %q = %q (refused %v), want refused by mcpwarden for the NUL", args, clip(text), refused)
			}
		}
		if n := len(readAudit(t, w.f.auditPath, "result")); n != 0 {
			t.Errorf("audit has %d result events, want none: no call reached goserver", n)
		}
	})
}
