//go:build linux

package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// rawStdioProxy starts mcpwarden serve on the fixture over stdio, its
// stdout an OS pipe whose read end the test holds (so that it can stop
// reading, or close it), and runs the handshake. It returns the input to
// write lines to, the read end, and a channel that gets cmd.Wait's error.
func rawStdioProxy(t *testing.T, f *fixture, args ...string) (cmd *exec.Cmd, in *os.File, out *os.File, exited chan error, stderr *testkit.LockedBuffer) {
	t.Helper()
	stderr = &testkit.LockedBuffer{}
	cmd = exec.Command(binary, append([]string{"serve", "--config", f.config}, args...)...)
	cmd.Stderr = stderr
	cmd.SysProcAttr = groupAttr()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	inR.Close()
	outW.Close()
	exited = make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = killGroup(cmd.Process.Pid)
		inW.Close()
		outR.Close()
		if t.Failed() {
			t.Logf("mcpwarden stderr:\n%s", stderr.String())
		}
	})
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if line, err := bufio.NewReader(outR).ReadString('\n'); err != nil || !strings.Contains(line, `"result"`) {
		t.Fatalf("initialize: %q, %v", line, err)
	}
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return cmd, inW, outR, exited, stderr
}

// wantCleanExit waits up to within for the process to exit and fails the
// test unless it exited with status 0 (not killed by a signal).
func wantCleanExit(t *testing.T, exited chan error, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				t.Fatalf("mcpwarden was killed by %v", ws.Signal())
			}
			t.Fatalf("mcpwarden exited with status %d, want 0", ee.ExitCode())
		} else if err != nil {
			t.Fatal(err)
		}
	case <-time.After(within):
		t.Fatalf("mcpwarden had not exited %s later", within)
	}
	return time.Since(start)
}

// TestStdioClientLeavingMidResultDoesNotKillTheProxy: a stdio client
// closes its read end while calls are in flight. Go kills a process that
// writes to a broken pipe on fd 1 unless SIGPIPE is handled; mcpwarden
// handles it, so the write fails instead, the connection ends, every
// call has its result event (the one still running says the client
// left), and mcpwarden exits with status 0.
func TestStdioClientLeavingMidResultDoesNotKillTheProxy(t *testing.T) {
	t.Parallel()
	f, upstreamLog := slowFixture(t, "stdio")
	_, in, out, exited, _ := rawStdioProxy(t, f)
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow__sleep","arguments":{"seconds":0}}}`)
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow__sleep","arguments":{"seconds":30}}}`)
	testkit.Eventually(t, 30*time.Second, "both calls reaching the upstream", func() bool {
		data, _ := os.ReadFile(upstreamLog)
		return strings.Count(string(data), "tools/call ") >= 2
	})
	out.Close() // the client leaves; the next write breaks the pipe
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	took := wantCleanExit(t, exited, 20*time.Second)
	t.Logf("mcpwarden exited %s after its client left", took.Round(time.Millisecond))
	if d := readAudit(t, f.auditPath, "decision"); len(d) != 2 {
		t.Errorf("%d decision events, want 2", len(d))
	}
	results := readAudit(t, f.auditPath, "result")
	if len(results) != 2 {
		t.Fatalf("result events %+v, want one for each of the 2 calls", results)
	}
	if left := results[1]; !strings.Contains(left.Error, "client left") {
		t.Errorf("the result event of the call still running says %q, want that the client left", left.Error)
	}
}

// TestSigtermWithANonReadingStdioClientExitsWithinGrace: a stdio client
// that stops reading fills the pipe, so mcpwarden's writes block. On
// SIGTERM, shutdown must not wait on them: mcpwarden exits with status 0
// within the grace period and stdioFlushWait (1 s) more.
func TestSigtermWithANonReadingStdioClientExitsWithinGrace(t *testing.T) {
	t.Parallel()
	const grace = 2 * time.Second
	f, _ := slowFixture(t, "stdio")
	cmd, in, out, exited, _ := rawStdioProxy(t, f, "--shutdown-grace", grace.String())
	// Enough answers to fill a pipe (64 KiB on Linux) several times over.
	var lines strings.Builder
	for i := range 6000 {
		fmt.Fprintf(&lines, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", i+1)
	}
	go func() { _, _ = in.WriteString(lines.String()) }()
	testkit.Eventually(t, 20*time.Second, "the pipe to the client full", func() bool { return unread(out) >= 60<<10 })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	took := wantCleanExit(t, exited, grace+15*time.Second)
	t.Logf("mcpwarden exited %s after SIGTERM (grace %s) with a client that does not read", took.Round(time.Millisecond), grace)
	if took > grace+5*time.Second {
		t.Errorf("mcpwarden exited %s after SIGTERM, want within the %s grace and 5 s", took, grace)
	}
}

// unread is how many bytes the pipe r reads from holds (FIONREAD).
func unread(r *os.File) int {
	var n int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, r.Fd(), syscall.TIOCINQ, uintptr(unsafe.Pointer(&n))); errno != 0 {
		return 0
	}
	return int(n)
}
