package upstream

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/sandbox"
)

// callText calls tool on "iso" as r and returns its text.
func callText(t *testing.T, pool *Pool, r Route, tool string, args map[string]any) string {
	t.Helper()
	raw, err := pool.Call(t.Context(), "iso", &r, mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s as %s: %v", tool, r.Principal, err)
	}
	return firstText(t, raw)
}

// One isolated child must not read what another wrote to its HOME: each
// has its own, in each tier and for each kind of isolation.
func TestIsolatedChildCannotReadAnotherChildsHome(t *testing.T) {
	t.Parallel()
	for _, iso := range []Isolation{IsolationPerPrincipal, IsolationPerSession} {
		for _, tier := range []sandbox.Tier{sandbox.TierAuto, sandbox.TierLandlock} {
			t.Run(iso.String()+" "+tier.String(), func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				home, tmp := filepath.Join(dir, "sbx", "home"), filepath.Join(dir, "sbx", "tmp")
				spec := Spec{Isolation: iso, IsolationIdleTimeout: 200 * time.Millisecond, Sandbox: &Sandbox{Launcher: os.Args[0], Policy: sandbox.Policy{Tier: tier, Home: home, TmpDir: tmp}}}
				pool, _ := isolatedPool(t, spec, testModeEnv+"=home-files")
				alice, bob := Route{Principal: "alice", Session: "s1"}, Route{Principal: "bob", Session: "s2"}
				path := callText(t, pool, alice, "write_home", map[string]any{"text": "alice's secret"})
				if strings.HasPrefix(path, "ERROR") || strings.HasPrefix(path, home+"/") {
					t.Fatalf("alice's child wrote %q, want a file in a HOME of its own", path)
				}
				if got := callText(t, pool, alice, "read_file", map[string]any{"path": path}); got != "alice's secret" {
					t.Fatalf("alice reads back %q, so the attempt proves nothing", got)
				}
				if got := callText(t, pool, bob, "read_file", map[string]any{"path": path}); !strings.HasPrefix(got, "ERROR") {
					t.Fatalf("bob's child read alice's HOME: %q", got)
				}
				if info, err := os.Stat(filepath.Dir(path)); err != nil || info.Mode().Perm() != 0o700 {
					t.Errorf("alice's HOME is %v (%v), want a 0700 directory", info, err)
				}
			})
		}
	}
}

// A session's child's HOME goes when the child stops; a principal's
// child's stays for the principal's next child. Both stop when idle.
func TestSessionChildsHomeIsRemovedAndPrincipalChildsKeptWhenTheyStop(t *testing.T) {
	t.Parallel()
	for _, iso := range []Isolation{IsolationPerPrincipal, IsolationPerSession} {
		t.Run(iso.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			spec := Spec{Isolation: iso, IsolationIdleTimeout: 200 * time.Millisecond, Sandbox: &Sandbox{Launcher: os.Args[0],
				Policy: sandbox.Policy{Home: filepath.Join(dir, "sbx", "home"), TmpDir: filepath.Join(dir, "sbx", "tmp")}}}
			pool, _ := isolatedPool(t, spec, testModeEnv+"=home-files")
			path := callText(t, pool, Route{Principal: "alice", Session: "s1"}, "write_home", map[string]any{"text": "x"})
			// A removal takes the child's idle stop; a kept HOME is given
			// long enough for that.
			wait := 2 * time.Second
			if iso == IsolationPerSession {
				wait = 10 * time.Second
			}
			gone := false
			for end := time.Now().Add(wait); !gone && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				_, err := os.Stat(filepath.Dir(path))
				gone = os.IsNotExist(err)
			}
			if want := iso == IsolationPerSession; gone != want {
				t.Errorf("%s: the child's HOME %s removed: %v, want %v", iso, filepath.Dir(path), gone, want)
			}
		})
	}
}
