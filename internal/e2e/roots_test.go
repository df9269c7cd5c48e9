package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// A rootsClient answers roots/list with its current root and counts the
// requests.
type rootsClient struct {
	mu    sync.Mutex
	root  string
	asked int
}

func (r *rootsClient) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked++
	return &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file://" + r.root, Name: "work"}, {URI: "https://example.com/not-a-dir"}}}, nil
}

func (r *rootsClient) set(root string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.root = root
}

func (r *rootsClient) times() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.asked
}

func TestRootsFromClientDriveWorkspace(t *testing.T) {
	t.Parallel()
	protocols(t, rootsDriveWorkspace)
}

func rootsDriveWorkspace(t *testing.T, _ bool, opts ...client.ClientOption) {
	f := newFixture(t, "stdio", "  fs:\n"+serverFilesystem("SANDBOX"), `  default: deny
  workspace_from_roots: true
  outside_workspace: deny
  allow: ["mcp:fs:*"]`)
	a, b := filepath.Join(f.sandbox, "a"), filepath.Join(f.sandbox, "b")
	mkdir(t, a, b)
	inA, inB := filepath.Join(a, "x.txt"), filepath.Join(b, "y.txt")
	for _, p := range []string{inA, inB} {
		if err := os.WriteFile(p, []byte("data"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	roots := &rootsClient{root: a}
	c := connectStdio(t, f, append(opts, client.WithRootsHandler(roots))...)
	read := func(p string) (ok bool, text string) {
		res := callTool(t, c, "fs__read_text_file", map[string]any{"path": p})
		return !res.IsError, testkit.Text(res)
	}
	if ok, text := read(inA); !ok {
		t.Errorf("a file under the client's root was refused: %s", text)
	}
	if ok, text := read(inB); ok || !strings.Contains(text, "outside_workspace") {
		t.Errorf("a file outside the client's root: %q, want refused by outside_workspace", text)
	}
	if n := roots.times(); n != 1 {
		t.Errorf("the client was asked for its roots %d times, want once (cached)", n)
	}

	roots.set(b)
	if err := c.RootListChanges(t.Context()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for ok, _ := read(inB); !ok; ok, _ = read(inB) {
		if time.Now().After(deadline) {
			t.Fatal("after roots/list_changed the new root is still outside the workspace")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if ok, _ := read(inA); ok {
		t.Error("after roots/list_changed the old root is still inside the workspace")
	}
}

func TestClientWithoutRootsHasNoWorkspace(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "stdio", "  fs:\n"+serverFilesystem("SANDBOX"), `  default: deny
  workspace_from_roots: true
  outside_workspace: deny
  allow: ["mcp:fs:*"]`)
	target := filepath.Join(f.sandbox, "x.txt")
	if err := os.WriteFile(target, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := connectStdio(t, f, client.WithLegacyProtocolOnly())
	if res := callTool(t, c, "fs__read_text_file", map[string]any{"path": target}); !res.IsError {
		t.Errorf("without roots every path is outside the workspace; the read was allowed: %s", testkit.Text(res))
	}
}

func TestRootsAndAskInOneCall(t *testing.T) {
	t.Parallel()
	protocols(t, func(t *testing.T, _ bool, opts ...client.ClientOption) {
		f := newFixture(t, "stdio", "  fs:\n"+serverFilesystem("SANDBOX"), `  default: deny
  workspace_from_roots: true
  outside_workspace: deny
  ask: ["mcp:fs:write_file"]`)
		roots := &rootsClient{root: f.sandbox}
		h := &human{answer: says("allow_once")}
		c := connectStdio(t, f, append(opts, client.WithRootsHandler(roots), client.WithElicitationHandler(h))...)
		target := filepath.Join(f.sandbox, "asked.txt")
		if res := write(t, c, target, "x"); res.IsError || !exists(target) {
			t.Errorf("a write inside the roots, allowed once: %q", testkit.Text(res))
		}
		if h.times() != 1 {
			t.Errorf("asked %d times, want 1", h.times())
		}
		outside := filepath.Join(f.dir, "outside.txt")
		if res := write(t, c, outside, "x"); !res.IsError || exists(outside) {
			t.Errorf("a write outside the roots: %q", testkit.Text(res))
		}
	})
}
