package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// markEnv is set, to a value unique to the test, in the environment of the
// upstreams a test starts, so that they can be found after mcpwarden is
// gone and they were reparented.
const markEnv = "WARDEN_E2E_MARK" // not MCPWARDEN_: those never reach a sandboxed server

// marked returns the pids of the live processes whose environment holds
// markEnv=mark.
func marked(mark string) []int {
	want := []byte(markEnv + "=" + mark + "\x00")
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil || !bytes.Contains(env, want) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killMarked kills what is left of a test's upstreams.
func killMarked(mark string) {
	for _, pid := range marked(mark) {
		_ = signalPID(pid, syscall.SIGKILL)
	}
}

// waitNoneMarked fails the test unless every process marked mark is gone
// within bound.
func waitNoneMarked(t *testing.T, mark string, bound time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		left := marked(mark)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: upstream processes %v still running %s later", what, left, bound)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stubbornServer is a config snippet for a stdio "server" that never
// answers, ignores its stdin closing and ignores SIGTERM (sleep, with
// SIGTERM ignored, exec'd by sh so that it is mcpwarden's child itself).
func stubbornServer(mark string) string {
	return fmt.Sprintf(`    command: sh
    args: ["-c", "trap '' TERM; exec sleep 300"]
    env: {%s: %q}
    init_timeout: 60s`, markEnv, mark)
}

// startServe starts mcpwarden serve on f's config with its stdin a pipe
// the caller holds, and returns the command and that pipe.
func startServe(t *testing.T, f *fixture, stderr *testkit.LockedBuffer) (*exec.Cmd, *os.File) {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "serve", "--config", f.config)
	cmd.Stdin, cmd.Stderr = inR, stderr
	cmd.SysProcAttr = groupAttr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	inR.Close()
	t.Cleanup(func() {
		inW.Close()
		_ = cmd.Process.Kill()
		if t.Failed() {
			t.Logf("mcpwarden stderr:\n%s", stderr.String())
		}
	})
	return cmd, inW
}

func TestUpstreamDiesWithKilledProxy(t *testing.T) {
	t.Parallel()
	mark := t.Name() + "-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { killMarked(mark) })
	f := newFixture(t, "stdio", "  stubborn:\n"+stubbornServer(mark), `  allow: ["mcp:stubborn:*"]`)
	stderr := &testkit.LockedBuffer{}
	cmd, _ := startServe(t, f, stderr)
	testkit.Eventually(t, 10*time.Second, "the stubborn upstream started", func() bool { return len(marked(mark)) > 0 })
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no chance to stop anything
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitNoneMarked(t, mark, 2*time.Second, "after kill -9 of mcpwarden")
}

// TestEarlyClientDisconnectLeavesNoChild closes mcpwarden's stdin half a
// second after starting it, while its upstream is still starting, then
// does what mcp-go's stdio client does on Close: 2 s for the server to
// exit, SIGTERM, 3 s more, SIGKILL.
func TestEarlyClientDisconnectLeavesNoChild(t *testing.T) {
	t.Parallel()
	mark := t.Name() + "-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { killMarked(mark) })
	f := newFixture(t, "stdio", "  everything:\n"+serverEverything()+fmt.Sprintf("\n    env: {%s: %q}", markEnv, mark), `  allow: ["mcp:everything:*"]`)
	stderr := &testkit.LockedBuffer{}
	cmd, stdin := startServe(t, f, stderr)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	time.Sleep(500 * time.Millisecond)
	stdin.Close()
	exited := func(d time.Duration) bool {
		select {
		case <-done:
			return true
		case <-time.After(d):
			return false
		}
	}
	if !exited(2 * time.Second) {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if !exited(3 * time.Second) {
			t.Logf("mcpwarden did not exit within 5 s of its stdin closing; killed")
			_ = cmd.Process.Kill()
			<-done
		}
	}
	waitNoneMarked(t, mark, 3*time.Second, "after the client disconnected")
}
