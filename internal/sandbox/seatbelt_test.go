package sandbox

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestSeatbeltProfileMatchesGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		policy Policy
	}{
		{name: "default", policy: Policy{Home: "/Users/me/Library/Application Support/mcpwarden/sandbox/fs/home",
			TmpDir: "/Users/me/Library/Application Support/mcpwarden/sandbox/fs/tmp"}},
		{name: "workspace-and-host-network", policy: Policy{Network: NetworkHost,
			Exec:   []string{"/Users/me/.npm/_npx/1234/node_modules"},
			Read:   []string{"/Users/me/docs/style guide.md"},
			Write:  []string{"/Users/me/code/project \"quoted\"", `/Users/me/back\slash`},
			Home:   "/Users/me/Library/Application Support/mcpwarden/sandbox/fetch/home",
			TmpDir: "/Users/me/Library/Application Support/mcpwarden/sandbox/fetch/tmp"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := SeatbeltProfile(tt.policy, "/Users/me")
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "seatbelt", tt.name+".sb")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to write it)", err)
			}
			if got != string(want) {
				t.Errorf("the profile differs from %s (go test -update rewrites it):\n%s", golden, got)
			}
			if _, _, err := readSBPL(got); err != nil {
				t.Errorf("the profile does not read back: %v", err)
			}
		})
	}
}

func TestSeatbeltProfileRefusesPathsItCannotQuoteSafely(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, want string
	}{
		{name: "a relative path", path: "work", want: "not absolute"},
		{name: "a newline that would start a new line of rules", path: "/w\n(allow default)", want: "control character"},
		{name: "a NUL", path: "/w\x00", want: "control character"},
		{name: "invalid UTF-8", path: "/w\xff", want: "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := SeatbeltProfile(Policy{Write: []string{tt.path}}, "/Users/me")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

// A path that closes its string and adds a rule stays one string.
func TestSeatbeltProfileKeepsAQuoteInAPathInsideItsString(t *testing.T) {
	t.Parallel()
	checkSeatbeltPath(t, `/w") (allow default) ("`)
	checkSeatbeltPath(t, `/w\") (allow default) (\"`)
}

func FuzzSeatbeltQuotingKeepsEveryPathOneString(f *testing.F) {
	for _, s := range []string{"x", `a") (allow default) ("`, `\`, `\\"`, "é", ";", "#|", "a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkSeatbeltPath(t, s) })
}

// checkSeatbeltPath checks that a writable path named "/w/"+s (or s
// itself when absolute) is refused, or makes a profile of the same shape
// as a plain path's, where it appears as itself, as a string.
func checkSeatbeltPath(t *testing.T, s string) {
	t.Helper()
	p := s
	if !strings.HasPrefix(p, "/") {
		p = "/w/" + s
	}
	prof, err := SeatbeltProfile(Policy{Write: []string{p}}, "/Users/me")
	if err != nil {
		return
	}
	base, _ := SeatbeltProfile(Policy{Write: []string{"/w/plain"}}, "/Users/me")
	shape, strs, err := readSBPL(prof)
	if err != nil {
		t.Fatalf("the profile for %q does not read: %v\n%s", p, err, prof)
	}
	baseShape, _, _ := readSBPL(base)
	if !slices.Equal(shape, baseShape) {
		t.Fatalf("the path %q changed the profile's rules:\n%s", p, prof)
	}
	n := 0
	for _, str := range strs {
		if str == filepath.Clean(p) {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("the path %q is %d strings, want 2 (allow, deny exec):\n%s", p, n, prof)
	}
}

// readSBPL reads a profile as Seatbelt's Scheme reader does: its shape
// (every token, each string as "STR") and its strings, decoded.
func readSBPL(s string) (shape, strs []string, err error) {
	depth := 0
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == ';':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == ' ' || c == '\n' || c == '\t':
			i++
		case c == '(' || c == ')':
			if c == '(' {
				depth++
			} else if depth--; depth < 0 {
				return nil, nil, fmt.Errorf("unbalanced ) at %d", i)
			}
			shape = append(shape, string(c))
			i++
		case c == '"':
			var b strings.Builder
			i++
			for ; ; i++ {
				if i >= len(s) {
					return nil, nil, fmt.Errorf("unterminated string")
				}
				if s[i] == '\\' && i+1 < len(s) {
					i++
					b.WriteByte(s[i])
					continue
				}
				if s[i] == '"' {
					i++
					break
				}
				b.WriteByte(s[i])
			}
			shape = append(shape, "STR")
			strs = append(strs, b.String())
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \n\t()\";", rune(s[j])) {
				j++
			}
			shape = append(shape, s[i:j])
			i = j
		}
	}
	if depth != 0 {
		return nil, nil, fmt.Errorf("unbalanced (")
	}
	return shape, strs, nil
}

// Seatbelt lets a later rule win: mcpwarden's own files inside a granted
// workspace are denied after the workspace is allowed, so the deny holds.
func TestSeatbeltProfileDeniesHiddenFilesAfterTheGrantThatHoldsThem(t *testing.T) {
	t.Parallel()
	prof, err := SeatbeltProfile(Policy{Write: []string{"/Users/me/proj"}, Hide: []string{"/Users/me/proj/mcpwarden.yaml"}}, "/Users/me")
	if err != nil {
		t.Fatal(err)
	}
	allow := strings.Index(prof, "(allow file-read* file-write*\n  (subpath \"/Users/me/proj\")")
	deny := strings.Index(prof, "(deny file-read* file-write* process-exec\n  (subpath \"/Users/me/proj/mcpwarden.yaml\"))")
	if allow < 0 || deny < allow {
		t.Errorf("the profile does not deny the config after allowing the workspace (allow at %d, deny at %d):\n%s", allow, deny, prof)
	}
	if plain, _ := SeatbeltProfile(Policy{Write: []string{"/Users/me/proj"}}, "/Users/me"); strings.Contains(plain, "mcpwarden's own files") {
		t.Errorf("a profile with nothing to hide has the rule:\n%s", plain)
	}
}
