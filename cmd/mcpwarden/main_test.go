package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/internal/sandbox"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// The test binary doubles as a stdio MCP server when this variable is set,
// so that commands that start upstreams (tools) can be tested without
// Node.js. The name has no MCPWARDEN_ prefix: those are config overrides.
const standInEnv = "WARDEN_CMD_TEST_STDIO_SERVER"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.LaunchArg {
		sandbox.Main() // the test binary is mcpwarden's launcher too; it never returns
	}
	if kind := os.Getenv(standInEnv); kind != "" {
		s := newStandIn()
		switch kind {
		case standInPaths:
			s = newPathsStandIn()
		case standInCatalog:
			addStandInCatalog(s)
		}
		if err := mcpserver.ServeStdio(s); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// newStandIn is a small filesystem-like MCP server.
func newStandIn() *mcpserver.MCPServer {
	s := testkit.NewStandIn()
	for _, name := range []string{"read_file", "write_file", "delete_file", "echo", "get.status"} {
		s.AddTool(mcp.NewTool(name, mcp.WithString("path")), testkit.Reply("ok"))
	}
	return s.MCP()
}

// run runs the whole CLI with args and returns its exit code and output.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = execute(t.Context(), args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestHelpListsEveryCommand(t *testing.T) {
	t.Parallel()
	code, out, _ := run(t, "--help")
	if code != 0 {
		t.Fatalf("--help exited %d", code)
	}
	for _, c := range []string{"serve", "check", "validate", "tools", "import", "audit", "doctor", "version", "completion", "Exit codes:"} {
		if !strings.Contains(out, "\n  "+c+" ") && !strings.Contains(out, c) {
			t.Errorf("--help does not mention %q:\n%s", c, out)
		}
	}
	code, out, _ = run(t, "completion", "bash")
	if code != 0 || !strings.Contains(out, "bash completion") {
		t.Errorf("completion bash = %d, %.80q", code, out)
	}
}
