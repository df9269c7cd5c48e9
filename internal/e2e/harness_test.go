package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// Set up once by TestMain.
var (
	repoRoot string // the repository
	binary   string // the mcpwarden binary under test
	npmBin   string // .tools/npm/node_modules/.bin
	npmMods  string // .tools/npm/node_modules
)

func TestMain(m *testing.M) {
	code, err := setup(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e setup:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func setup(m *testing.M) (int, error) {
	wd, err := os.Getwd()
	if err != nil {
		return 0, err
	}
	repoRoot = filepath.Clean(filepath.Join(wd, "..", ".."))
	install := exec.Command(filepath.Join(repoRoot, ".ci", "setup"))
	install.Stdout, install.Stderr = os.Stderr, os.Stderr
	if err := install.Run(); err != nil {
		return 0, fmt.Errorf("installing the pinned test tools with .ci/setup: %w", err)
	}
	npmMods = filepath.Join(repoRoot, ".tools", "npm", "node_modules")
	npmBin = filepath.Join(npmMods, ".bin")

	dir, err := os.MkdirTemp("", "mcpwarden-e2e-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	// Every mcpwarden started makes its audit signing key in
	// $XDG_STATE_HOME/mcpwarden: a directory of the tests', not the real
	// ~/.local/state/mcpwarden of whoever runs them. Not inside dir: the
	// stand-in servers are built there, so a sandbox grants it as their
	// installation, and mcpwarden's own files must not be under a grant.
	state, err := os.MkdirTemp("", "mcpwarden-e2e-state-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(state)
	if err := os.Setenv("XDG_STATE_HOME", state); err != nil {
		return 0, err
	}
	binary = filepath.Join(dir, "mcpwarden")
	build := exec.Command("go", "build", "-race", "-o", binary, "./cmd/mcpwarden")
	build.Dir = repoRoot
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return 0, fmt.Errorf("building mcpwarden: %w", err)
	}
	return m.Run(), nil
}

// A fixture is one test's world: a sandbox directory the filesystem server
// may touch, a config, and the audit log the proxy writes.
type fixture struct {
	dir       string // the test's temp dir
	sandbox   string // the directory server-filesystem serves
	config    string // path of the config file
	auditPath string
	serveArgs []string // more flags for serve
	pid       int      // of the mcpwarden started by startHTTP or connectStdio
}

// serverEverything and serverFilesystem are config snippets starting the
// pinned reference servers with node directly (no npx, no network).
func serverEverything() string {
	return fmt.Sprintf(`    command: node
    args: [%q, stdio]`, filepath.Join(npmMods, "@modelcontextprotocol", "server-everything", "dist", "index.js"))
}

func serverFilesystem(root string) string {
	return fmt.Sprintf(`    command: node
    args: [%q, %q]`, filepath.Join(npmMods, "@modelcontextprotocol", "server-filesystem", "dist", "index.js"), root)
}

// appendConfig adds top-level YAML to the fixture's config.
func (f *fixture) appendConfig(t *testing.T, yaml string) {
	t.Helper()
	file, err := os.OpenFile(f.config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if _, err := file.WriteString(yaml); err != nil {
		t.Fatal(err)
	}
}

// newFixture writes a config with listen, the servers block and the policy
// block given (YAML, already indented under their keys), and an audit log.
func newFixture(t *testing.T, listen, servers, policy string) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{dir: dir, sandbox: filepath.Join(dir, "sandbox"), auditPath: filepath.Join(dir, "audit.jsonl")}
	if err := os.Mkdir(f.sandbox, 0o755); err != nil {
		t.Fatal(err)
	}
	servers = strings.ReplaceAll(servers, "SANDBOX", f.sandbox)
	policy = strings.ReplaceAll(policy, "SANDBOX", f.sandbox)
	// startup_wait is far above the default so that a loaded machine,
	// where a reference server takes many seconds to start, does not
	// fail tests that list tools right after connecting; the tests of the
	// default set it back (setStartupWait).
	// Every server runs sandboxed, as by default; the fixture's sandbox
	// directory is the servers' workspace, which the Go stand-ins read
	// and write by absolute path without being given it as an argument.
	cfg := fmt.Sprintf("listen: %q\n%s\nsandbox:\n  write: [%q]\nservers:\n%s\npolicy:\n%s\naudit:\n  path: %q\n  required: true\n", listen, fixtureStartupWait, f.sandbox, servers, policy, f.auditPath)
	f.config = filepath.Join(dir, "mcpwarden.yaml")
	if err := os.WriteFile(f.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// fixtureStartupWait is the startup_wait line of every fixture's config.
const fixtureStartupWait = "startup_wait: 60s"

// setStartupWait sets the fixture's startup_wait to d.
func (f *fixture) setStartupWait(t *testing.T, d string) {
	t.Helper()
	data, err := os.ReadFile(f.config)
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.Replace(string(data), fixtureStartupWait, "startup_wait: "+d, 1))
	if err := os.WriteFile(f.config, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// standardFixture is the usual world: everything and fs, a policy that
// allows echo and reads in the sandbox, denies writes under the sandbox's
// "protected" directory and hides move_file.
func standardFixture(t *testing.T, listen string) *fixture {
	return newFixture(t, listen,
		"  everything:\n"+serverEverything()+"\n  fs:\n"+serverFilesystem("SANDBOX"),
		`  default: deny
  deny:
    - "mcp:fs:move_file"
    - "mcp:fs:write_file:path=SANDBOX/protected/**"
  ask:
    - "mcp:fs:edit_file"
  allow:
    - "mcp:everything:echo"
    - "mcp:fs:read_*:path=SANDBOX/**"
    - "mcp:fs:write_file"
    - "mcp:fs:list_allowed_directories"`)
}

// connectStdio starts mcpwarden serve as the client's stdio server.
func connectStdio(t *testing.T, f *fixture, opts ...client.ClientOption) *client.Client {
	t.Helper()
	return connectStdioWithStderr(t, f, &testkit.LockedBuffer{}, opts...)
}

// connectStdioWithStderr is connectStdio keeping mcpwarden's stderr in stderr.
func connectStdioWithStderr(t *testing.T, f *fixture, stderr *testkit.LockedBuffer, opts ...client.ClientOption) *client.Client {
	t.Helper()
	var started *exec.Cmd
	tr := transport.NewStdioWithOptions(binary, nil, []string{"serve", "--config", f.config},
		transport.WithCommandFunc(func(_ context.Context, command string, env, args []string) (*exec.Cmd, error) {
			cmd := exec.Command(command, args...)
			started = cmd
			cmd.Env = append(os.Environ(), env...)
			cmd.Stderr = stderr
			cmd.SysProcAttr = groupAttr()
			return cmd, nil
		}))
	c := client.NewClient(tr, opts...)
	defer func() {
		if started != nil && started.Process != nil {
			f.pid = started.Process.Pid
		}
	}()
	t.Cleanup(func() {
		c.Close()
		if t.Failed() {
			t.Logf("mcpwarden stderr:\n%s", stderr.String())
		}
	})
	initialize(t, c)
	return c
}

// startHTTP starts mcpwarden serve on a free loopback port and returns its
// /mcp URL and stderr once it is serving.
func startHTTP(t *testing.T, f *fixture, env ...string) (string, *testkit.LockedBuffer) {
	t.Helper()
	stderr := &testkit.LockedBuffer{}
	cmd := exec.Command(binary, append([]string{"serve", "--config", f.config}, f.serveArgs...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = stderr
	cmd.SysProcAttr = groupAttr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f.pid = cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = killGroup(cmd.Process.Pid)
			<-done
			t.Errorf("mcpwarden did not exit within 10s of SIGTERM")
		}
		if t.Failed() {
			t.Logf("mcpwarden stderr:\n%s", stderr.String())
		}
	})
	addr := listenAddr(t, f)
	url := "http://" + addr + "/mcp"
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			t.Fatalf("mcpwarden exited before serving: %v\n%s", err, stderr.String())
		default:
		}
		if conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			conn.Close()
			return url, stderr
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("mcpwarden did not listen on %s within 60s\n%s", addr, stderr.String())
	return "", nil
}

func listenAddr(t *testing.T, f *fixture) string {
	t.Helper()
	data, err := os.ReadFile(f.config)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(data), "\n")
	var addr string
	if _, err := fmt.Sscanf(first, "listen: %q", &addr); err != nil {
		t.Fatalf("no listen line in config: %v", err)
	}
	return addr
}

func connectHTTP(t *testing.T, url string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	initialize(t, c)
	return c
}

func initialize(t *testing.T, c *client.Client) {
	t.Helper()
	if err := c.Start(t.Context()); err != nil {
		t.Fatalf("starting client: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	_, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION,
		ClientInfo:      mcp.Implementation{Name: "e2e-test", Version: "1.0"},
	}})
	if err != nil {
		t.Fatalf("initialize through mcpwarden: %v", err)
	}
}

func callTool(t *testing.T, c *client.Client, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	return res
}

// auditEvent is the part of an audit line the tests check.
type auditEvent struct {
	Event     string         `json:"event"`
	ID        string         `json:"id"`
	Tool      string         `json:"tool"`
	WireName  string         `json:"wire_name"`
	Server    string         `json:"server"`
	Decision  string         `json:"decision"`
	Rule      string         `json:"rule"`
	ArmedBy   string         `json:"armed_by"`
	GrantedBy string         `json:"granted_by"`
	Arguments map[string]any `json:"arguments"`
	Session   string         `json:"session"`
	Profile   string         `json:"profile"`
	Principal string         `json:"principal"`
	Error     string         `json:"error"`
	Detail    string         `json:"detail"`
	Bytes     *int64         `json:"result_bytes"`
	Preview   string         `json:"result_preview"`
	Sandbox   string         `json:"sandbox"`
}

// readAudit returns the audit log's events of the given kind.
func readAudit(t *testing.T, path, kind string) []auditEvent {
	t.Helper()
	var events []auditEvent
	for _, e := range auditLines[auditEvent](t, path) {
		if e.Event == kind {
			events = append(events, e)
		}
	}
	return events
}

// auditLines returns every line of the audit log at path, each decoded
// into a T: the part of an event a test checks.
func auditLines[T any](t *testing.T, path string) []T {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatalf("opening audit log: %v", err)
	}
	defer file.Close()
	var out []T
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		var e T
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit line %q is not JSON: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return out
}

// A standIn is a hand-written upstream program of this package
// (./goserver, ./slowserver), built once per run next to the mcpwarden
// binary, on first use.
type standIn struct {
	pkg  string // the directory under internal/e2e
	once sync.Once
	path string
	err  error
}

var (
	goServer   = &standIn{pkg: "goserver"}
	slowServer = &standIn{pkg: "slowserver"}
)

// binary returns the stand-in's binary, building it on first use.
func (b *standIn) binary(t *testing.T) string {
	t.Helper()
	b.once.Do(func() {
		path := filepath.Join(filepath.Dir(binary), b.pkg)
		build := exec.Command("go", "build", "-o", path, "./internal/e2e/"+b.pkg)
		build.Dir = repoRoot
		if out, err := build.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("building %s: %w\n%s", b.pkg, err, out)
			return
		}
		b.path = path
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}
