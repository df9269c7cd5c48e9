package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/internal/sandbox"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// The test binary doubles as a stdio MCP server when stdioServerEnv is set:
// it serves newStandIn and starts a grandchild (sleep) whose pid it writes
// to the file the variable names, to check that Close stops the whole
// process group. With testDirEnv set too it serves newFaultyStandIn, which
// records what happens to it in that directory; testModeEnv (a comma list)
// makes it misbehave from the start: "garbage" writes non-JSON lines to
// stdout first, "hang-init" never answers anything, "slow-init=DURATION"
// waits that long before serving, "default-signals" leaves SIGTERM to
// kill it (ServeStdio catches it), "exit-after=N" exits
// after answering N calls; "home-files" adds tools that write and read
// files in its HOME (see addHomeTools).
const (
	stdioServerEnv = "WARDEN_UPSTREAM_TEST_SERVER"
	testDirEnv     = "WARDEN_UPSTREAM_TEST_DIR"
	testModeEnv    = "WARDEN_UPSTREAM_TEST_MODE"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.LaunchArg {
		sandbox.Main() // the test binary is the sandbox launcher too; it never returns
	}
	if pidFile := os.Getenv(stdioServerEnv); pidFile != "" {
		sleep := exec.Command("sleep", "300")
		if err := sleep.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_ = os.WriteFile(pidFile, []byte(strconv.Itoa(sleep.Process.Pid)), 0o600)
		srv := newStandIn(5)
		if strings.Contains(os.Getenv(testModeEnv), "home-files") {
			addHomeTools(srv)
		}
		if dir := os.Getenv(testDirEnv); dir != "" {
			srv = newFaultyStandIn(dir, os.Getenv(testModeEnv))
		}
		if os.Getenv(fetchToolEnv) != "" {
			addFetchTool(srv)
		}
		if os.Getenv(capsToolEnv) != "" {
			addCapsTool(srv)
		}
		serve := func() error { return mcpserver.ServeStdio(srv) }
		if strings.Contains(os.Getenv(testModeEnv), "default-signals") {
			// No handler of SIGTERM: it kills, as it does most servers.
			serve = func() error { return mcpserver.NewStdioServer(srv).Listen(context.Background(), os.Stdin, os.Stdout) }
		}
		if err := serve(); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// newStandIn is an MCP server with n tools, tool0 … tool<n-1>, each echoing
// its "text" argument, listed two to a page. Their inputSchema
// (standInSchema) has keywords mcp-go's decoded schema drops.
func newStandIn(n int) *mcpserver.MCPServer {
	s := testkit.NewStandIn(mcpserver.WithPaginationLimit(2))
	for i := range n {
		s.AddTool(mcp.NewToolWithRawSchema(fmt.Sprintf("tool%d", i), "", json.RawMessage(standInSchema)), testkit.Echo)
	}
	return s.MCP()
}

// standInSchema is the inputSchema of newStandIn's tools.
const standInSchema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"text":{"type":"string"}},"not":{"required":["x"]}}`

func TestStartConnectsEveryTransportAndFollowsPagination(t *testing.T) {
	t.Parallel()
	streamable := httptest.NewServer(mcpserver.NewStreamableHTTPServer(newStandIn(5)))
	t.Cleanup(streamable.Close)
	sse := mcpserver.NewSSEServer(newStandIn(5))
	sseHTTP := httptest.NewServer(sse)
	t.Cleanup(sseHTTP.Close)
	pidFile := filepath.Join(t.TempDir(), "pid")

	pool := Start(t.Context(), map[string]Spec{
		"http":  {Transport: TransportHTTP, URL: streamable.URL + "/mcp"},
		"sse":   {Transport: TransportSSE, URL: sseHTTP.URL + "/sse"},
		"stdio": {Transport: TransportStdio, Command: os.Args[0], Env: map[string]string{stdioServerEnv: pidFile}},
	}, nil)
	t.Cleanup(func() { pool.Close() })

	for _, name := range []string{"http", "sse", "stdio"} {
		t.Run(name, func(t *testing.T) {
			tools, err := pool.Tools(name)
			if err != nil {
				t.Fatal(err)
			}
			if len(tools) != 5 {
				t.Errorf("listed %d tools, want all 5 across pages", len(tools))
			}
			for _, tool := range tools {
				if string(tool.RawInputSchema) != standInSchema {
					t.Errorf("%s's inputSchema listed as %s (decoded %+v), want the upstream's %s", tool.Name, tool.RawInputSchema, tool.InputSchema, standInSchema)
				}
			}
			res, err := pool.Call(t.Context(), name, nil, mcp.CallToolParams{Name: "tool3", Arguments: map[string]any{"text": "via " + name}})
			if err != nil {
				t.Fatal(err)
			}
			if got := firstText(t, res); got != "via "+name {
				t.Errorf("tool3 = %q", got)
			}
		})
	}
}

func TestCloseLeavesNoOrphanedProcesses(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	pool := Start(t.Context(), map[string]Spec{
		"stdio": {Transport: TransportStdio, Command: os.Args[0], Env: map[string]string{stdioServerEnv: pidFile}},
	}, nil)
	if err := pool.Err("stdio"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(string(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pool.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// The grandchild is not ours to reap; wait for it to be gone or a zombie.
	testkit.Eventually(t, 5*time.Second, fmt.Sprintf("grandchild %d of the stdio server to end after Close", pid), func() bool { return !alive(pid) })
}

func TestFailedServerIsReportedAndOthersWork(t *testing.T) {
	t.Parallel()
	streamable := httptest.NewServer(mcpserver.NewStreamableHTTPServer(newStandIn(1)))
	t.Cleanup(streamable.Close)
	pool := Start(t.Context(), map[string]Spec{
		"good":    {Transport: TransportHTTP, URL: streamable.URL + "/mcp"},
		"missing": {Transport: TransportStdio, Command: "/nonexistent/mcp-server"},
		"crashes": {Transport: TransportStdio, Command: "sh", Args: []string{"-c", "echo 'config file not found' >&2; exit 3"}},
		"slow":    {Transport: TransportStdio, Command: "sleep", Args: []string{"30"}, InitTimeout: 300 * time.Millisecond},
	}, nil)
	t.Cleanup(func() { pool.Close() })

	if err := pool.Err("good"); err != nil {
		t.Fatalf("good server failed: %v", err)
	}
	tests := []struct {
		server string
		want   []string
	}{
		{"missing", []string{`upstream "missing"`, "/nonexistent/mcp-server"}},
		{"crashes", []string{`upstream "crashes"`, "config file not found"}},
		{"slow", []string{`upstream "slow"`, "init_timeout"}},
	}
	for _, tt := range tests {
		err := pool.Err(tt.server)
		if err == nil {
			t.Errorf("%s: no error", tt.server)
			continue
		}
		for _, want := range tt.want {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not mention %q", tt.server, err, want)
			}
		}
		if _, err := pool.Call(t.Context(), tt.server, nil, mcp.CallToolParams{Name: "x"}); err == nil || !strings.Contains(err.Error(), tt.server) {
			t.Errorf("%s: Call error %v does not name the server", tt.server, err)
		}
	}
	if _, err := pool.Call(t.Context(), "good", nil, mcp.CallToolParams{Name: "tool0"}); err != nil {
		t.Errorf("good server call: %v", err)
	}
}

// firstText is the text of the first content item of a tools/call result
// as Call returns it.
func firstText(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	res, err := mcp.ParseCallToolResult(&raw)
	if err != nil {
		t.Fatalf("decoding result %s: %v", raw, err)
	}
	if len(res.Content) == 0 {
		t.Fatalf("result %s has no content", raw)
	}
	text, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		t.Fatalf("result %s: first item is %T, not text", raw, res.Content[0])
	}
	return text.Text
}

// TestMissingCwdIsReportedAsTheCwdNotTheCommand starts stdio servers in a
// folder that does not exist and in a file: the start fails naming the
// folder and the key that set it, where exec would name the command (a
// missing /usr/bin/sh).
func TestMissingCwdIsReportedAsTheCwdNotTheCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gone, own, file := filepath.Join(dir, "gone"), filepath.Join(dir, "own"), filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	origin := func(name string) string { return "config m.yaml:4:5: servers." + name + ".cwd" }
	pool := Start(t.Context(), map[string]Spec{
		"gone":  {Transport: TransportStdio, Command: "sh", Dir: gone, DirOrigin: origin("gone")},
		"file":  {Transport: TransportStdio, Command: "sh", Dir: file, DirOrigin: origin("file")},
		"nokey": {Transport: TransportStdio, Command: "sh", Dir: own},
	}, nil)
	t.Cleanup(func() { pool.Close() })
	tests := []struct {
		server string
		want   []string
	}{
		{"gone", []string{origin("gone"), strconv.Quote(gone) + ": it does not exist", "create the folder or correct cwd"}},
		{"file", []string{origin("file"), "it is not a directory", "create the folder or correct cwd"}},
		{"nokey", []string{"working directory " + strconv.Quote(own) + ": it does not exist"}},
	}
	for _, tt := range tests {
		err := pool.Err(tt.server)
		if err == nil {
			t.Errorf("%s: no error", tt.server)
			continue
		}
		for _, want := range tt.want {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not mention %q", tt.server, err, want)
			}
		}
		if strings.Contains(err.Error(), "fork/exec") {
			t.Errorf("%s: error %q names the command, not the folder", tt.server, err)
		}
	}
}
