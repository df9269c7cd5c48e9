package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// dirRoots is a client whose one MCP root is dir.
type dirRoots struct{ dir string }

func (r dirRoots) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file://" + r.dir, Name: "project"}}}, nil
}

// TestClientRootReachesDeniedDirLive: server-filesystem replaces its
// directories with the client's MCP roots when the client announces them
// (mcpwarden passes roots/list_changed upstream and relays the server's
// roots/list to the client), then resolves a relative path against the
// client's root, which is neither its cwd nor its argument. So
// `private/s.txt` passes a deny on PROJECT/private even with cwd set to the
// served directory. The rules read a relative value against
// rules.Call.UpstreamRoots; the proxy does not fill it yet.
func TestClientRootReachesDeniedDirLive(t *testing.T) {
	t.Parallel()
	t.Skip("open (found by helper 16c): the proxy must record the roots it relays to each upstream's roots/list and pass them as rules.Call.UpstreamRoots (or answer roots/list itself, DESIGN §3); a prototype of that makes this test pass")
	project := filepath.Join(t.TempDir(), "project")
	if err := os.MkdirAll(filepath.Join(project, "private"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(project, "private", "s.txt"), "PROJECT-SECRET")
	f := newFixture(t, "stdio", "  fs:\n"+serverFilesystem("SANDBOX")+"\n    cwd: SANDBOX", `  default: deny
  deny:
    - "mcp:*:*:@path=`+project+`/private/**"
  allow:
    - "mcp:fs:*"`)
	c := connectStdio(t, f, client.WithLegacyProtocolOnly(), client.WithRootsHandler(dirRoots{project}))
	if err := c.RootListChanges(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Wait for the server to take the root; if it never does (mcpwarden
	// answers roots/list itself), the reads below must be refused all the
	// same.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if text, _ := tryTool(t, c, "fs__list_allowed_directories", map[string]any{}); strings.Contains(text, project) {
			break
		}
	}
	for _, path := range []string{"private/s.txt", "./private/s.txt", "x/../private/s.txt"} {
		if text, refused := tryTool(t, c, "fs__read_text_file", map[string]any{"path": path}); !refused || strings.Contains(text, "PROJECT-SECRET") {
			t.Errorf("read_text_file %q = %q (refused %v), want refused", path, clip(text), refused)
		}
	}
}
