package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// A chooser answers the n-th form with answers[n-1] (declining after the
// last) and keeps the choices each form offered.
type chooser struct {
	mu      sync.Mutex
	answers []string
	offered [][]string
}

func (h *chooser) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var choices []string
	if props, ok := req.Params.RequestedSchema.(map[string]any)["properties"].(map[string]any); ok {
		if d, ok := props["decision"].(map[string]any); ok {
			switch e := d["enum"].(type) {
			case []any:
				for _, v := range e {
					s, _ := v.(string)
					choices = append(choices, s)
				}
			case []string:
				choices = e
			}
		}
	}
	h.offered = append(h.offered, choices)
	n := len(h.offered)
	if n > len(h.answers) {
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}, nil
	}
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"decision": h.answers[n-1]},
	}}, nil
}

func (h *chooser) asked() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.offered)
}

func (h *chooser) choices(n int) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.offered[n]
}

func mkdir(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPathlessGrantDoesNotCoverPathCall(t *testing.T) {
	t.Parallel()
	protocols(t, func(t *testing.T, _ bool, opts ...client.ClientOption) {
		f := askFixture(t)
		h := &chooser{answers: []string{"allow_session"}}
		c := connectStdio(t, f, append(opts, client.WithElicitationHandler(h))...)
		callTool(t, c, "fs__write_file", map[string]any{"content": "no path at all"})
		if h.asked() != 1 || !slices.Contains(h.choices(0), "allow_session") {
			t.Fatalf("a call without paths: asked %d times, want once with a session choice", h.asked())
		}
		callTool(t, c, "fs__write_file", map[string]any{"content": "still no path"})
		if h.asked() != 1 {
			t.Errorf("the pathless grant did not cover the next pathless call (asked %d times)", h.asked())
		}
		target := filepath.Join(f.sandbox, "anywhere.txt")
		write(t, c, target, "x")
		if exists(target) || h.asked() != 2 {
			t.Errorf("a pathless grant covered a write to %s (written %v, asked %d times)", target, exists(target), h.asked())
		}
	})
}

// TestEmptyPathArrayEarnsNoGrant: a path-like key holding no string path
// (an empty array, a number, an object) earns no session grant. Against
// server-filesystem, which declares path a string, such a call is refused
// before any rule by the argument type check (security round 3, attack
// 9), so it is never asked and earns nothing; the next real write is
// asked. The grant logic for such values, where a tool declares no type,
// is held by the proxy's grant tests.
func TestEmptyPathArrayEarnsNoGrant(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		path any
	}{
		{"an empty array", []any{}},
		{"a number", 5},
		{"an object", map[string]any{}},
		{"an array holding a number", []any{"/tmp/x", 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			protocols(t, func(t *testing.T, _ bool, opts ...client.ClientOption) {
				f := askFixture(t)
				h := &chooser{answers: []string{"allow_session"}}
				c := connectStdio(t, f, append(opts, client.WithElicitationHandler(h))...)
				for _, content := range []string{"x", "y"} {
					text, refused := tryTool(t, c, "fs__write_file", map[string]any{"path": tt.path, "content": content})
					if !refused || !strings.Contains(text, "but the tool declares a string") {
						t.Fatalf("path %v: %q (refused %v), want a refusal for its type", tt.path, text, refused)
					}
				}
				if h.asked() != 0 {
					t.Fatalf("asked %d times about a mistyped path, want it refused unasked", h.asked())
				}
				target := filepath.Join(f.sandbox, "after.txt")
				write(t, c, target, "z")
				if !exists(target) || h.asked() != 1 {
					t.Errorf("after path %v: written %v, asked %d times; want the write asked once and allowed", tt.path, exists(target), h.asked())
				}
			})
		})
	}
}

// grantFixture has sandbox/app/docs with a link inside it to
// sandbox/secret, outside docs but inside the filesystem server's root.
func grantFixture(t *testing.T) (f *fixture, docs, secret string) {
	f = askFixture(t)
	docs = filepath.Join(f.sandbox, "app", "docs")
	secret = filepath.Join(f.sandbox, "secret")
	mkdir(t, docs, secret)
	if err := os.Symlink(secret, filepath.Join(docs, "link")); err != nil {
		t.Fatal(err)
	}
	return f, docs, secret
}

func TestFolderGrantCoversSiblingFile(t *testing.T) {
	t.Parallel()
	protocols(t, func(t *testing.T, _ bool, opts ...client.ClientOption) {
		f, docs, _ := grantFixture(t)
		h := &chooser{answers: []string{"allow_session_folder"}}
		c := connectStdio(t, f, append(opts, client.WithElicitationHandler(h))...)
		first, sibling := filepath.Join(docs, "a.txt"), filepath.Join(docs, "b.txt")
		write(t, c, first, "1")
		if res := write(t, c, sibling, "2"); res.IsError || !exists(sibling) {
			t.Errorf("the folder grant on %s did not cover %s: %q", docs, sibling, testkit.Text(res))
		}
		if h.asked() != 1 {
			t.Errorf("asked %d times, want once for the folder", h.asked())
		}
		outside := filepath.Join(f.sandbox, "app", "c.txt")
		write(t, c, outside, "3")
		if exists(outside) || h.asked() != 2 {
			t.Errorf("the folder grant on %s covered %s (written %v, asked %d)", docs, outside, exists(outside), h.asked())
		}
	})
}

func TestGrantDoesNotFollowSymlinkOut(t *testing.T) {
	t.Parallel()
	protocols(t, func(t *testing.T, _ bool, opts ...client.ClientOption) {
		f, docs, secret := grantFixture(t)
		h := &chooser{answers: []string{"allow_session_folder"}}
		c := connectStdio(t, f, append(opts, client.WithElicitationHandler(h))...)
		write(t, c, filepath.Join(docs, "a.txt"), "1")
		through := filepath.Join(docs, "link", "secret.txt")
		write(t, c, through, "stolen")
		if exists(filepath.Join(secret, "secret.txt")) {
			t.Errorf("the grant on %s let a write through %s out to %s", docs, through, secret)
		}
		if h.asked() != 2 {
			t.Errorf("asked %d times, want the write through the link asked again", h.asked())
		}
	})
}

func TestFolderGrantByApproveDoesNotFollowSymlinkOut(t *testing.T) {
	t.Parallel()
	f := approvalsFixture(t, "20s")
	docs, secret := filepath.Join(f.sandbox, "app", "docs"), filepath.Join(f.sandbox, "secret")
	mkdir(t, docs, secret)
	if err := os.Symlink(secret, filepath.Join(docs, "link")); err != nil {
		t.Fatal(err)
	}
	c := connectStdio(t, f, client.WithLegacyProtocolOnly()) // cannot elicit: the approvals page is asked
	tok := readPageToken(t, f)
	first := filepath.Join(docs, "a.txt")
	pending := callAsync(t, c, map[string]any{"path": first, "content": "1"})
	runCLI(t, "approve", pendingAskID(t, tok), "--folder", "--config", f.config)
	if res := result(t, pending); res.IsError || !exists(first) {
		t.Fatalf("approve --folder: %q", testkit.Text(res))
	}
	sibling := filepath.Join(docs, "sub", "b.txt")
	mkdir(t, filepath.Dir(sibling))
	select {
	case res := <-callAsync(t, c, map[string]any{"path": sibling, "content": "2"}):
		if res.IsError || !exists(sibling) {
			t.Errorf("under the folder grant: %q", testkit.Text(res))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a file under the granted folder was held for approval")
	}
	escape := callAsync(t, c, map[string]any{"path": filepath.Join(docs, "link", "s.txt"), "content": "stolen"})
	id := pendingAskID(t, tok) // asked again: the link leads out of the folder
	runCLI(t, "deny", id, "--config", f.config)
	if res := result(t, escape); !res.IsError || exists(filepath.Join(secret, "s.txt")) {
		t.Errorf("a write through a link out of the granted folder: %q", testkit.Text(res))
	}
}

func TestPathlessGrantDoesNotCoverFoldedPathKey(t *testing.T) {
	t.Parallel()
	f := askFixture(t)
	h := &chooser{answers: []string{"allow_session"}}
	c := connectStdio(t, f, client.WithLegacyProtocolOnly(), client.WithElicitationHandler(h))
	callTool(t, c, "fs__write_file", map[string]any{"content": "no path"})
	for _, key := range []string{"PATH", "Path", "ſource"} {
		callTool(t, c, "fs__write_file", map[string]any{key: filepath.Join(f.sandbox, "x.txt"), "content": "y"})
	}
	if h.asked() != 4 {
		t.Errorf("asked %d times, want every call with a path-like key (in any case) asked", h.asked())
	}
}
