package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// sbxUser is the unprivileged user .ci/setup creates for the sandbox
// tests.
const sbxUser = "mcpwarden-sbx"

// unprivileged is who runs mcpwarden in TestSandboxHoldsThroughTheProxyForAnUnprivilegedUser:
// the user sbxUser when the tests run as root, else the tests' own user.
// It skips the test (or fails it in CI) when running as root without
// that user.
func unprivileged(t *testing.T) *syscall.Credential {
	t.Helper()
	if os.Getuid() != 0 {
		return nil // the tests' user is unprivileged already
	}
	uid, uerr := exec.Command("id", "-u", sbxUser).Output()
	gid, gerr := exec.Command("id", "-g", sbxUser).Output()
	if uerr != nil || gerr != nil {
		msg := fmt.Sprintf("running as root and the user %s is missing: run .ci/setup as root to create it (id: %v)", sbxUser, uerr)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	u, _ := strconv.Atoi(strings.TrimSpace(string(uid)))
	g, _ := strconv.Atoi(strings.TrimSpace(string(gid)))
	return &syscall.Credential{Uid: uint32(u), Gid: uint32(g)}
}

// copyExecutable copies the binary src to dst, mode 0755.
func copyExecutable(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// The whole chain as a user runs it: mcpwarden serve started by an
// unprivileged user, the config kept in the project the server works in
// (as the quickstart keeps it), a key in the user's ~/.ssh, and the
// malicious server behind the real proxy. Each escape is shown to work
// through evil_off (the same server, sandbox: off) first.
func TestSandboxHoldsThroughTheProxyForAnUnprivilegedUser(t *testing.T) {
	t.Parallel()
	cred := unprivileged(t)
	evil := evilBinary(t)
	root, err := os.MkdirTemp("", "mcpwarden-e2e-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	home, proj, bin := filepath.Join(root, "home"), filepath.Join(root, "proj"), filepath.Join(root, "bin")
	files := map[string]string{
		home + "/.ssh/id_ed25519": "-----BEGIN OPENSSH PRIVATE KEY-----\nfake\n",
		home + "/.bashrc":         "# bashrc\n",
		proj + "/README":          "the project\n",
		proj + "/.mcp.json":       `{"mcpServers": {"mcpwarden": {"command": "mcpwarden"}}}`,
	}
	for path, text := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(bin, 0o755)
	copyExecutable(t, binary, bin+"/mcpwarden")
	copyExecutable(t, evil, bin+"/evil")
	cfg := filepath.Join(proj, "mcpwarden.yaml")
	server := func(name, extra string) string {
		return fmt.Sprintf("  %s:\n    command: %q\n    cwd: %q\n    policy:\n      workspace: [%q]\n%s", name, bin+"/evil", proj, proj, extra)
	}
	yaml := fmt.Sprintf("listen: stdio\n%s\nservers:\n%s%s\npolicy:\n  allow: [\"mcp:evil:*\", \"mcp:evil_off:*\"]\naudit:\n  path: %q\n",
		fixtureStartupWait, server("evil", ""), server("evil_off", "    sandbox: off\n"), filepath.Join(home, "audit.jsonl"))
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(root, 0o755)
	if cred != nil {
		filepath.Walk(root, func(path string, _ os.FileInfo, err error) error {
			if err == nil {
				os.Lchown(path, int(cred.Uid), int(cred.Gid))
			}
			return nil
		})
	}

	stderr := &testkit.LockedBuffer{}
	var started *exec.Cmd
	tr := transport.NewStdioWithOptions(bin+"/mcpwarden", nil, []string{"serve", "--config", cfg},
		transport.WithCommandFunc(func(_ context.Context, command string, _, args []string) (*exec.Cmd, error) {
			cmd := exec.Command(command, args...)
			cmd.Dir = proj
			cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "LANG=C.UTF-8", "GORACE=atexit_sleep_ms=0",
				"GITHUB_TOKEN=ghp_0123456789abcdefghijklmnopqrstuvwxyz"}
			cmd.Stderr = stderr
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
			started = cmd
			return cmd, nil
		}))
	c := client.NewClient(tr)
	t.Cleanup(func() {
		c.Close()
		if t.Failed() {
			t.Logf("mcpwarden stderr:\n%s", stderr.String())
		}
	})
	initialize(t, c)
	var st syscall.Stat_t
	if err := syscall.Stat(fmt.Sprintf("/proc/%d", started.Process.Pid), &st); err != nil || (cred != nil && st.Uid != cred.Uid) {
		t.Fatalf("mcpwarden runs as uid %d (%v), want %s's", st.Uid, err, sbxUser)
	}

	tests := []struct {
		name, tool, a string
	}{
		{"reading the config kept in the project", "read_file", cfg},
		{"reading the user's SSH key", "read_file", home + "/.ssh/id_ed25519"},
		{"appending to the user's .bashrc", "append_file", home + "/.bashrc"},
		{"rewriting the project's client config", "append_file", proj + "/.mcp.json"},
		{"running a dropped binary through the dynamic loader in the project", "ldso_dropped", proj},
		{"finding a secret in its environment", "find_env", "GITHUB_TOKEN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, _ := tryTool(t, c, "evil_off__"+tt.tool, map[string]any{"a": tt.a})
			if !strings.HasPrefix(text, "ESCAPED") {
				t.Fatalf("unconfined, %s = %q; want it done (else the attempt proves nothing)", tt.name, clip(text))
			}
			text, _ = tryTool(t, c, "evil__"+tt.tool, map[string]any{"a": tt.a})
			if !strings.HasPrefix(text, "BLOCKED") {
				t.Errorf("sandboxed, %s = %q; want BLOCKED", tt.name, clip(text))
			}
		})
	}
	// Where user namespaces are allowed the config is masked, and the
	// audit event says so; tier landlock would have refused to start.
	field := upstreamSandbox(t, &fixture{auditPath: filepath.Join(home, "audit.jsonl")}, "evil")
	if strings.HasPrefix(field, "tier namespaces,") && !strings.Contains(field, "masked 1 of mcpwarden's files") {
		t.Errorf("evil's upstream audit event says sandbox %q, want it to name the config masked", field)
	}
	t.Logf("evil's sandbox: %s", field)
}
