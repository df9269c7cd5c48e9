package sandbox

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The Node variant of the malicious server, testdata/evilnode/evil.js,
// started as npx starts servers: node and a script. Each attempt escapes
// unsandboxed and is blocked in both tiers, as the unprivileged user.

// nodeEvil puts the Node server in the world and returns how to start
// it: node's own directory is executable (Command adds it), the script's
// readable, memory at its default (V8 reserves much).
func nodeEvil(t *testing.T, w world, m mode) sessionOpts {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no node on PATH: run .ci/setup")
		}
		t.Skip("no node on PATH")
	}
	src, err := os.ReadFile("testdata/evilnode/evil.js")
	if err != nil {
		t.Fatal(err)
	}
	dir := w.root + "/node"
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/evil.js", src, 0o644); err != nil {
		t.Fatal(err)
	}
	p := w.policy(m)
	p.Limits.MemoryBytes = 0
	p.Read = append(p.Read, dir)
	return sessionOpts{argv: []string{node, dir + "/evil.js"}, policy: &p}
}

// nodeTool is the escape of calling one of the Node server's tools.
func nodeTool(name string, args func(w world) (a, b string)) escape {
	return func(t *testing.T, w world, m mode) string {
		a, b := args(w)
		return start(t, w, m, nodeEvil(t, w, m)).call(name, a, b)
	}
}

func TestNodeSandboxStopsReadingSSHKey(t *testing.T) {
	t.Parallel()
	checkEscape(t, nodeTool("read_file", func(w world) (string, string) { return w.home + "/.ssh/id_ed25519", "" }))
}

func TestNodeSandboxStopsReadingSSHKeyThroughASymlinkInTheWorkspace(t *testing.T) {
	t.Parallel()
	checkEscape(t, nodeTool("symlink_read", func(w world) (string, string) { return w.work, w.home + "/.ssh/id_ed25519" }))
}

func TestNodeSandboxStopsAppendingToBashrc(t *testing.T) {
	t.Parallel()
	checkEscape(t, nodeTool("append_file", func(w world) (string, string) { return w.home + "/.bashrc", "" }))
}

func TestNodeSandboxStopsTCPConnectToLoopback(t *testing.T) {
	t.Parallel()
	addr := listener(t)
	checkEscape(t, nodeTool("tcp_connect", func(world) (string, string) { return addr, "" }))
}

func TestNodeSandboxStopsUDPSend(t *testing.T) {
	t.Parallel()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	addr := conn.LocalAddr().String()
	checkEscape(t, nodeTool("udp_send", func(world) (string, string) { return addr, "" }))
}

func TestNodeSandboxStopsReadingMcpwardenEnviron(t *testing.T) {
	t.Parallel()
	checkEscape(t, func(t *testing.T, w world, m mode) string {
		s := start(t, w, m, nodeEvil(t, w, m))
		return s.call("grep_environ", itoa(s.cmd.Process.Pid), "MCPWARDEN_TOKEN_KEY")
	})
}

// A detached child (its own session where it may) must be gone once the
// server is stopped: it appends to a mark file while it lives.
func TestNodeSandboxStopsChildOutlivingServer(t *testing.T) {
	t.Parallel()
	checkEscape(t, func(t *testing.T, w world, m mode) string {
		mark := w.work + "/node-daemon.mark"
		t.Cleanup(func() { killMarked(mark) })
		s := start(t, w, m, nodeEvil(t, w, m))
		if got := s.call("daemon", mark, ""); !strings.HasPrefix(got, "ESCAPED") {
			return got
		}
		waitGrowing(mark, 5*time.Second)
		if size(mark) == 0 {
			return "BLOCKED: the child never wrote its mark"
		}
		s.stop()
		before := size(mark)
		time.Sleep(700 * time.Millisecond)
		if after := size(mark); after > before {
			return "ESCAPED: a child still writes after the server stopped"
		}
		return "BLOCKED: no descendant left"
	})
}
