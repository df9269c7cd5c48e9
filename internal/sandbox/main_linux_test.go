package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// The test binary is its own launcher and its own stand-in for mcpwarden
// (the "warden"), chosen by its first argument.
const wardenArg = "__test-warden"

// sbxUser is the unprivileged user .ci/setup creates; the tests run the
// warden as that user when they run as root.
const sbxUser = "mcpwarden-sbx"

// env is what TestMain prepared for every test.
var env struct {
	dir      string // world-readable: the binaries
	self     string // a copy of this test binary, the launcher
	evil     string // the malicious server
	cred     *syscall.Credential
	uid, gid int
	userErr  string // why there is no unprivileged user to run as
}

func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case LaunchArg:
			Main()
		case wardenArg:
			os.Exit(wardenMain(os.Args[2:]))
		case threadProbeArg:
			os.Exit(threadProbeMain(os.Args[2:]))
		case SelfTestArg:
			os.Exit(SelfTestMain(os.Args[2:]))
		case doctorArg:
			os.Exit(doctorMain(os.Args[2:]))
		}
	}
	os.Exit(setupAndRun(m))
}

func setupAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "mcpwarden-sandbox-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	env.dir = dir
	env.uid, env.gid = os.Getuid(), os.Getgid()
	if os.Getuid() == 0 {
		out, err := exec.Command("id", "-u", sbxUser).Output()
		gout, gerr := exec.Command("id", "-g", sbxUser).Output()
		if err != nil || gerr != nil {
			env.userErr = fmt.Sprintf("running as root and the user %s is missing: run .ci/setup as root (id: %v)", sbxUser, err)
		} else {
			env.uid, _ = strconv.Atoi(string(trimNL(out)))
			env.gid, _ = strconv.Atoi(string(trimNL(gout)))
			env.cred = &syscall.Credential{Uid: uint32(env.uid), Gid: uint32(env.gid)}
		}
	}
	self, err := os.Executable()
	if err == nil {
		env.self = filepath.Join(dir, "sandbox.test")
		err = copyFile(self, env.self)
	}
	if err == nil {
		os.Mkdir(filepath.Join(dir, "bin"), 0o755)
		env.evil = filepath.Join(dir, "bin", "evil")
		build := exec.Command("go", "build", "-o", env.evil, "./internal/evil")
		build.Stderr = os.Stderr
		err = build.Run()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "setting up the sandbox tests:", err)
		return 1
	}
	return m.Run()
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// needUser fails a test (in CI) or skips it (elsewhere) when it runs as
// root without the unprivileged user to drop to.
func needUser(t *testing.T) {
	t.Helper()
	if env.userErr == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(env.userErr)
	}
	t.Skip(env.userErr)
}

// wardenSignalled is what the warden prints when it gets SIGUSR1.
const wardenSignalled = "WARDEN GOT SIGUSR1"

// wardenMain stands in for mcpwarden: it runs the server given after the
// mode ("plain": as mcpwarden does without a sandbox, with its whole
// environment; or a policy as JSON) with its own stdin and stdout, prints
// the sandbox report on stderr, and survives SIGUSR1. With a terminal on
// fd 3 it first makes that its controlling terminal.
func wardenMain(args []string) int {
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		for range usr1 {
			fmt.Fprintln(os.Stderr, wardenSignalled)
		}
	}()
	if os.Getenv("WARDEN_TTY") == "1" {
		if _, err := unix.Setsid(); err != nil {
			fmt.Fprintln(os.Stderr, "warden setsid:", err)
			return 3
		}
		if err := unix.IoctlSetInt(3, unix.TIOCSCTTY, 0); err != nil {
			fmt.Fprintln(os.Stderr, "warden TIOCSCTTY:", err)
			return 3
		}
		syscall.CloseOnExec(3)
	}
	mode, argv := args[0], args[1:]
	if mode == "plain" {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "warden:", err)
		}
		return 0
	}
	var p Policy
	if err := json.Unmarshal([]byte(mode), &p); err != nil {
		fmt.Fprintln(os.Stderr, "warden policy:", err)
		return 3
	}
	ctx := context.Background()
	cmd, err := Command(ctx, env0(), p, argv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "warden:", err)
		return 3
	}
	cmd.Cmd.Stdin, cmd.Cmd.Stdout, cmd.Cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "warden:", err)
		return 3
	}
	rep, rerr := cmd.Report(ctx)
	b, _ := json.Marshal(rep)
	fmt.Fprintf(os.Stderr, "REPORT %s\n", b)
	if rerr != nil {
		fmt.Fprintln(os.Stderr, "warden:", rerr)
	}
	if l := cmd.ProxyListener(); l != nil {
		px := wardenEgress(os.Getenv(wardenEgressAllow))
		go px.Serve(ctx, l)
		defer px.Close()
	}
	cmd.Wait()
	return 0
}

// env0 is the launcher for the warden: this binary.
func env0() string {
	self, _ := os.Executable()
	return self
}

// threadProbeArg runs a probe: a thread started before the launcher
// confines the process tries to read a file after.
const threadProbeArg = "__test-thread-probe"

func threadProbeMain(args []string) int {
	var p Policy
	if err := json.Unmarshal([]byte(args[0]), &p); err != nil {
		fmt.Println("policy:", err)
		return 3
	}
	ready, start, done := make(chan struct{}), make(chan struct{}), make(chan string)
	go func() {
		runtime.LockOSThread() // this thread exists before confinement
		close(ready)
		<-start
		if _, err := os.ReadFile(args[1]); err != nil {
			done <- "BLOCKED: " + err.Error()
			return
		}
		done <- "ESCAPED: read " + args[1]
	}()
	<-ready
	if args[2] == "confine" {
		rep, _ := confine(spec{Policy: p, Tier: TierLandlock})
		if !rep.Started {
			fmt.Println("confine:", rep.Error)
			return 3
		}
	}
	close(start)
	fmt.Println(<-done)
	return 0
}
