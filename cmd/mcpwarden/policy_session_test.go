package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// TestSuggestFromASessionServed: a session served by mcpwarden under a
// permissive policy is recorded in its audit log; policy suggest, run on
// that log against the policy to enforce (default: ask), proposes the
// folder read and the host fetched, and lists the secret the deny rule
// refused.
func TestSuggestFromASessionServed(t *testing.T) {
	t.Parallel()
	up := testkit.NewStandIn()
	up.AddTool(mcp.NewTool("read_text_file", mcp.WithString("path")), testkit.Echo)
	up.AddTool(mcp.NewTool("fetch", mcp.WithString("url")), testkit.Echo)
	upURL := up.URL(t)

	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	listen := testkit.FreeAddr(t)
	config := func(dflt string) string {
		return fmt.Sprintf("listen: %q\nservers:\n  up: { url: %q }\npolicy:\n  default: %s\n  workspace: [%q]\n  deny: [\"mcp:*:*:@path=**/.env\"]\naudit: { path: audit.jsonl, unsigned: true }\n",
			listen, upURL, dflt, ws)
	}
	recording, enforcing := filepath.Join(dir, "recording.yaml"), filepath.Join(dir, "enforcing.yaml")
	for path, text := range map[string]string{recording: config("allow"), enforcing: config("ask")} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stderr := &testkit.LockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, &globals{}, serveFlags{config: recording}, strings.NewReader(""), io.Discard, stderr)
	}()
	testkit.Eventually(t, 10*time.Second, "serve listening on "+listen, func() bool {
		conn, err := net.DialTimeout("tcp", listen, 100*time.Millisecond)
		if err == nil {
			conn.Close()
		}
		return err == nil
	})
	tr, err := transport.NewStreamableHTTP("http://" + listen + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.Initialize(t, c, mcp.LATEST_PROTOCOL_VERSION)
	for _, call := range []struct{ tool, key, value string }{
		{"up__read_text_file", "path", ws + "/src/main.go"},
		{"up__read_text_file", "path", ws + "/src/util/strings.go"},
		{"up__read_text_file", "path", ws + "/.env"},
		{"up__fetch", "url", "https://go.dev/doc/"},
		{"up__fetch", "url", "https://go.dev/ref/spec"},
	} {
		testkit.CallTool(t, c, call.tool, map[string]any{call.key: call.value})
	}
	c.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr)
	}

	code, out, errOut := run(t, "policy", "suggest", "--config", enforcing, filepath.Join(dir, "audit.jsonl"))
	if code != 0 {
		t.Fatalf("policy suggest exited %d: %s", code, errOut)
	}
	for _, want := range []string{
		`- "mcp:up:read_text_file:path=` + ws + `/src/**"`,
		`- "mcp:up:fetch:url.host=go.dev:url.scheme=https"`,
		"# refused by a deny rule (mcp:*:*:@path=**/.env); not suggested — 1 request:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("suggest's output lacks %q:\n%s", want, out)
		}
	}
}
