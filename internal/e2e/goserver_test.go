package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// startGoServerHTTP starts goserver on a free loopback port and returns its
// streamable HTTP endpoint; the server is stopped when the test ends.
func startGoServerHTTP(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(goServer.binary(t), "-http", "127.0.0.1:0")
	stderr := &testkit.LockedBuffer{}
	cmd.Stderr = stderr
	cmd.SysProcAttr = groupAttr()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = killGroup(cmd.Process.Pid)
			<-done
		}
		if t.Failed() {
			t.Logf("goserver stderr:\n%s", stderr.String())
		}
	})
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		if s.Scan() {
			line <- s.Text()
		}
		close(line)
	}()
	select {
	case url, ok := <-line:
		if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
			t.Fatalf("goserver -http printed %q, want its URL\n%s", url, stderr.String())
		}
		return url
	case <-time.After(30 * time.Second):
		t.Fatalf("goserver -http printed no URL within 30s\n%s", stderr.String())
		return ""
	}
}

// A goUpstream is one way mcpwarden reaches goserver.
type goUpstream struct {
	name   string
	server func(t *testing.T) string // the servers block entry for "go"
}

// goUpstreams are goserver as a stdio child of mcpwarden and as a local
// streamable HTTP server (whose paths are on this machine too, so it is
// marked resolve_symlinks).
func goUpstreams() []goUpstream {
	return []goUpstream{
		{"stdio", func(t *testing.T) string {
			return fmt.Sprintf("  go:\n    command: %q", goServer.binary(t))
		}},
		{"http", func(t *testing.T) string {
			return fmt.Sprintf("  go:\n    url: %q\n    resolve_symlinks: true", startGoServerHTTP(t))
		}},
	}
}

// goWorld is a test's world around goserver: app is the directory the
// policy allows (f.dir/app), outside holds what the attacks are after.
type goWorld struct {
	f       *fixture
	c       *client.Client
	app     string
	outside string
}

// eachGoUpstream runs fn once per goUpstream, in parallel, with mcpwarden
// (serving the test client over stdio) in front of goserver and the policy
// given, in which APP and OUTSIDE stand for the world's directories.
func eachGoUpstream(t *testing.T, policy string, fn func(t *testing.T, w goWorld)) {
	for _, up := range goUpstreams() {
		t.Run(up.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			app, outside := filepath.Join(dir, "app"), filepath.Join(dir, "outside")
			for _, d := range []string{app, outside} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			p := strings.NewReplacer("APP", app, "OUTSIDE", outside).Replace(policy)
			server := up.server(t)
			if strings.Contains(server, "command:") {
				// The rules are under test: the server can reach both
				// directories, so a refusal is theirs, not the sandbox's.
				server += fmt.Sprintf("\n    sandbox: { write: [%q, %q] }", app, outside)
			}
			f := newFixture(t, "stdio", server, p)
			w := goWorld{f: f, app: app, outside: outside}
			w.c = connectStdio(t, f)
			fn(t, w)
		})
	}
}

// tryTool calls a tool and returns the result's text and whether it was
// refused (an error result or a JSON-RPC error).
func tryTool(t *testing.T, c *client.Client, name string, args map[string]any) (text string, refused bool) {
	t.Helper()
	res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
	if err != nil {
		return err.Error(), true
	}
	return testkit.Text(res), res.IsError
}

// writeFile writes a test file, failing the test on error.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// fileHas reports whether the file at path exists with exactly content.
func fileHas(path, content string) bool {
	data, err := os.ReadFile(path)
	return err == nil && string(data) == content
}

// clip shortens a result's text for a failure message.
func clip(s string) string {
	const limit = 120
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "…"
}
