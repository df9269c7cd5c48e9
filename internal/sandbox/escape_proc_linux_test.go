package sandbox

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The warden stands in for mcpwarden: the server signals and ptraces it.
func TestSandboxStopsSignallingMcpwarden(t *testing.T) {
	t.Parallel()
	checkEscape(t, func(t *testing.T, w world, m mode) string {
		s := start(t, w, m, sessionOpts{})
		return s.call("signal", itoa(s.cmd.Process.Pid), "")
	})
}

// kill(-1) reaches every process the sender may signal: the user's whole
// session, mcpwarden included. The warden says when it got the signal. Not
// parallel: kill(-1) reaches the other tests' processes too.
func TestSandboxStopsSignallingEveryProcessOfTheUser(t *testing.T) {
	checkEscapeInTurn(t, func(t *testing.T, w world, m mode) string {
		s := start(t, w, m, sessionOpts{})
		if got := s.call("signal_all", "", ""); !strings.HasPrefix(got, "ESCAPED") {
			return got
		}
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if strings.Contains(s.stderr.String(), wardenSignalled) {
				return "ESCAPED: mcpwarden got SIGUSR1 from kill(-1)"
			}
		}
		return "BLOCKED: kill(-1) reached nothing outside"
	})
}

func TestSandboxStopsPtracingMcpwarden(t *testing.T) {
	t.Parallel()
	checkEscape(t, func(t *testing.T, w world, m mode) string {
		s := start(t, w, m, sessionOpts{})
		return s.call("ptrace", itoa(s.cmd.Process.Pid), "")
	})
}

// The warden has a terminal the test owns as its controlling terminal, as
// mcpwarden started from a shell has; the server must not type into it.
func TestSandboxStopsTIOCSTIOnTerminal(t *testing.T) {
	t.Parallel()
	checkEscape(t, terminalEscape("tiocsti"))
}

// The request is an unsigned int: a filter comparing 64 bits would let
// TIOCSTI with a high bit set through.
func TestSandboxStopsTIOCSTIWithHighBitsInRequest(t *testing.T) {
	t.Parallel()
	checkEscape(t, terminalEscape("tiocsti_high"))
}

func terminalEscape(tool string) escape {
	return func(t *testing.T, w world, m mode) string {
		master, slave := openPTY(t)
		t.Cleanup(func() { master.Close() })
		go func() { // drain what is written and typed
			b := make([]byte, 4096)
			for {
				if _, err := master.Read(b); err != nil {
					return
				}
			}
		}()
		s := start(t, w, m, sessionOpts{tty: slave})
		slave.Close()
		return s.call(tool, "", "")
	}
}

func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	path := "/dev/pts/" + strconv.Itoa(n)
	os.Chown(path, env.uid, env.gid)
	s, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}

// A double-forked daemon that left the session must be gone once the
// server is stopped: it appends to a mark file while it lives.
func TestSandboxStopsDaemonOutlivingServer(t *testing.T) {
	t.Parallel()
	checkEscape(t, func(t *testing.T, w world, m mode) string {
		mark := w.work + "/daemon.mark"
		t.Cleanup(func() { killMarked(mark) })
		s := start(t, w, m, sessionOpts{})
		if got := s.call("daemon", mark, ""); !strings.HasPrefix(got, "ESCAPED") {
			return got
		}
		waitGrowing(mark, 5*time.Second)
		s.stop()
		before := size(mark)
		time.Sleep(700 * time.Millisecond)
		if after := size(mark); after > before {
			return "ESCAPED: a daemon still writes after the server stopped"
		}
		return "BLOCKED: no descendant left"
	})
}

// mcpwarden killed by SIGKILL cleans nothing up: the kernel must end the
// server and every descendant, in each tier.
func TestSandboxStopsDaemonOutlivingKilledMcpwarden(t *testing.T) {
	t.Parallel()
	checkEscape(t, func(t *testing.T, w world, m mode) string {
		mark := w.work + "/daemon.mark"
		t.Cleanup(func() { killMarked(mark) })
		s := start(t, w, m, sessionOpts{})
		if got := s.call("daemon", mark, ""); !strings.HasPrefix(got, "ESCAPED") {
			return got
		}
		waitGrowing(mark, 5*time.Second)
		s.cmd.Process.Kill()
		s.stop()
		time.Sleep(300 * time.Millisecond) // the kernel's parent-death signals
		before := size(mark)
		time.Sleep(700 * time.Millisecond)
		if after := size(mark); after > before {
			return "ESCAPED: a daemon still writes after mcpwarden was killed"
		}
		return "BLOCKED: no descendant left"
	})
}

// The next step: the server kills what would end its descendants (its
// supervisor in tier landlock) first, then leaves a daemon, then
// mcpwarden dies.
func TestSandboxStopsServerKillingItsSupervisor(t *testing.T) {
	t.Parallel()
	checkEscape(t, func(t *testing.T, w world, m mode) string {
		mark := w.work + "/daemon.mark"
		t.Cleanup(func() { killMarked(mark) })
		s := start(t, w, m, sessionOpts{})
		killed := s.call("kill_parent", "", "")
		if got := s.call("daemon", mark, ""); !strings.HasPrefix(got, "ESCAPED") {
			return got
		}
		waitGrowing(mark, 5*time.Second)
		s.cmd.Process.Kill()
		s.stop()
		time.Sleep(300 * time.Millisecond)
		before := size(mark)
		time.Sleep(700 * time.Millisecond)
		if after := size(mark); after > before || strings.HasPrefix(killed, "ESCAPED") {
			return "ESCAPED: " + killed + "; the daemon still writes: " + strconv.FormatBool(after > before)
		}
		return "BLOCKED: " + killed
	})
}

// The server itself, unsandboxed, outlives a killed mcpwarden too; what
// matters is that its daemon does not, so this variant starts it from a
// server that exits at once, leaving the daemon the supervisor's orphan.
func TestSandboxStopsDaemonOfExitedServer(t *testing.T) {
	t.Parallel()
	checkEscape(t, func(t *testing.T, w world, m mode) string {
		mark := w.work + "/daemon.mark"
		t.Cleanup(func() { killMarked(mark) })
		s := start(t, w, m, sessionOpts{argv: []string{env.evil, "daemon-child", mark}, noInit: true})
		s.cmd.Wait()
		waitGrowing(mark, 5*time.Second)
		before := size(mark)
		time.Sleep(700 * time.Millisecond)
		if after := size(mark); after > before {
			return "ESCAPED: a daemon still writes after its server exited"
		}
		return "BLOCKED: no descendant left"
	})
}

func size(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

func waitGrowing(path string, d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end) && size(path) == 0; {
		time.Sleep(20 * time.Millisecond)
	}
}

// killMarked kills the daemons writing mark (their command line names it).
func killMarked(mark string) {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(mark)) {
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// The bombs are not parallel with other tests: the process limit of tier
// landlock counts every task of the user.
func TestSandboxStopsForkBomb(t *testing.T) {
	checkEscapeInTurn(t, func(t *testing.T, w world, m mode) string {
		p := w.policy(m)
		p.Limits.Processes = 64
		return start(t, w, m, sessionOpts{policy: &p}).call("fork_bomb", "200", "")
	})
}

func TestSandboxStopsMemoryBomb(t *testing.T) {
	checkEscapeInTurn(t, tool("memory_bomb", func(w world) (string, string) { return "768", "" }))
}

// Go threads that exist before the launcher applies Landlock are
// restricted too (go-landlock restricts every thread): one started
// before cannot read the key after.
func TestSandboxStopsThreadStartedBeforeRestriction(t *testing.T) {
	t.Parallel()
	needUser(t)
	w := newWorld(t)
	b, err := json.Marshal(w.policy(llTier))
	if err != nil {
		t.Fatal(err)
	}
	for _, how := range []string{"plain", "confine"} {
		cmd := exec.Command(env.self, threadProbeArg, string(b), w.home+"/.ssh/id_ed25519", how)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: env.cred}
		cmd.Env = []string{"GORACE=atexit_sleep_ms=0"}
		out, err := cmd.CombinedOutput()
		got := strings.TrimSpace(string(out))
		if err != nil {
			t.Fatalf("%s: %v: %s", how, err, got)
		}
		escaped := strings.HasPrefix(got, "ESCAPED")
		if how == "plain" && !escaped {
			t.Fatalf("unconfined, the thread could not read the key, so the test proves nothing: %s", got)
		}
		if how == "confine" && escaped {
			t.Fatalf("a thread started before confinement read the key: %s", got)
		}
		t.Logf("%s: %s", how, got)
	}
}
