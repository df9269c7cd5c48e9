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
// directories with the MCP roots it is handed, then resolves a relative
// path against them. mcpwarden answers the server's roots/list itself
// (with the server's workspace, never the client's roots), and the rules
// read a relative value also against those handed roots
// (rules.Call.UpstreamRoots), so `private/s.txt` cannot pass a deny on
// PROJECT/private whatever the client announces.
func TestClientRootReachesDeniedDirLive(t *testing.T) {
	t.Parallel()
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
