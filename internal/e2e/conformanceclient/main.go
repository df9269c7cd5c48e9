// Command conformanceclient is the client the MCP conformance suite's
// client mode runs, with mcpwarden as the client under test. The suite
// runs it with the URL of its scenario server as the only argument and
// the scenario in MCP_CONFORMANCE_SCENARIO (and what the scenario gives
// the client, if anything, as JSON in MCP_CONFORMANCE_CONTEXT). It writes
// a mcpwarden config with that URL as a remote server, everything
// allowed, starts `mcpwarden serve` on stdio and, as a real client on the
// other side, does what the scenario expects of a client through it: for
// the auth/* scenarios, sign in with `mcpwarden login` and call the
// server's test tool (auth.go); for the others, the calls each scenario
// names (scenarios.go). The mcpwarden binary is in the MCPWARDEN
// environment variable.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// serverName is the scenario server's name in the config.
const serverName = "conf"

func main() {
	log.SetFlags(0)
	log.SetPrefix("conformanceclient: ")
	if len(os.Args) != 2 {
		log.Fatal("usage: conformanceclient SERVER_URL (MCPWARDEN=path of the mcpwarden binary)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	if err := run(ctx, os.Args[1], scenario); err != nil {
		log.Fatalf("scenario %s: %v", scenario, err)
	}
}

func run(ctx context.Context, serverURL, scenario string) error {
	bin := os.Getenv("MCPWARDEN")
	if bin == "" {
		return errors.New("MCPWARDEN is not set")
	}
	dir, err := os.MkdirTemp("", "conformanceclient-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	w := warden{bin: bin, dir: dir, config: filepath.Join(dir, "mcpwarden.yaml"),
		env:         append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(dir, "state")),
		loginWanted: make(chan struct{}, 1)}
	if strings.HasPrefix(scenario, "auth/") {
		return runAuth(ctx, w, serverURL)
	}
	return runScenario(ctx, w, serverURL, scenario)
}

// A warden is the mcpwarden of one run: its binary, the run's directory,
// the config in it and the environment mcpwarden runs in.
type warden struct {
	bin, dir, config string
	env              []string
	// loginWanted is signalled when serve logs that a server needs
	// `mcpwarden login`, as an operator reading its log would see.
	loginWanted chan struct{}
}

// writeConfig writes the config: the scenario server at serverURL with
// entry's further lines (each a "key: value" of the server's entry),
// everything allowed, the audit log in the run's directory.
func (w warden) writeConfig(serverURL string, entry ...string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "servers:\n  %s:\n    url: %q\n", serverName, serverURL)
	for _, line := range entry {
		fmt.Fprintf(&b, "    %s\n", line)
	}
	fmt.Fprintf(&b, "policy:\n  default: allow\naudit:\n  path: %q\n", filepath.Join(w.dir, "audit.jsonl"))
	return os.WriteFile(w.config, []byte(b.String()), 0o600)
}

// serve starts `mcpwarden serve` on stdio and initializes it at protocol
// version, its stderr copied to ours. It returns the client and its
// transport; the caller closes the client.
func (w warden) serve(ctx context.Context, version string, opts ...client.ClientOption) (*client.Client, transport.Interface, error) {
	t := transport.NewStdioWithOptions(w.bin, w.env, []string{"serve", "--config", w.config})
	c := client.NewClient(t, opts...)
	if err := c.Start(ctx); err != nil {
		return nil, nil, fmt.Errorf("starting mcpwarden serve: %w", err)
	}
	if stderr, ok := client.GetStderr(c); ok {
		go w.readLog(stderr)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: version,
		ClientInfo:      mcp.Implementation{Name: "conformanceclient", Version: "1"},
	}}); err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("initializing mcpwarden: %w", err)
	}
	return c, t, nil
}

// resultText is the text of a tool result.
func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// readLog copies serve's log to our stderr and signals loginWanted when a
// line says a server needs `mcpwarden login`.
func (w warden) readLog(log io.Reader) {
	sc := bufio.NewScanner(log)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(os.Stderr, line)
		if strings.Contains(line, "needs `mcpwarden login") {
			select {
			case w.loginWanted <- struct{}{}:
			default:
			}
		}
	}
	io.Copy(os.Stderr, log) // a line too long to scan: the rest as it comes
}
