package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A try is one attempt as the self-test sees it: Escaped when the
// forbidden action worked.
type try struct {
	Attempt Attempt `json:"attempt"`
	Escaped bool    `json:"escaped"`
	Detail  string  `json:"detail"`
}

// SelfTestMain is the self-test: mcpwarden's hidden subcommand runs it, and
// [Doctor] starts that through the launcher. It makes every attempt once
// and prints the results as JSON on stdout; every action is harmless (it
// reads, writes only in doctor's temporary directory, signals with
// SIGURG, and tries TIOCSTI with no character to type).
func SelfTestMain(args []string) int {
	if len(args) == 1 && args[0] == rawHelperArg {
		if _, err := openRaw(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	var a selfTestArgs
	if len(args) != 1 || json.Unmarshal([]byte(args[0]), &a) != nil {
		fmt.Fprintln(os.Stderr, "mcpwarden sandbox self-test: run by mcpwarden doctor only")
		return 2
	}
	timeout := time.Duration(a.TimeoutMS) * time.Millisecond
	attempts := map[Attempt]func() (string, error){
		AttemptReadHome:      func() (string, error) { return readSome(a.Secret) },
		AttemptWriteOutside:  func() (string, error) { return writeOutside(a.Outside) },
		AttemptExecDropped:   func() (string, error) { return execDropped(a.DropDir) },
		AttemptExecMemfd:     execMemfd,
		AttemptTCPConnect:    func() (string, error) { return dial("tcp", a.TCP, timeout) },
		AttemptUDPSend:       func() (string, error) { return sendUDP(a.UDP, timeout) },
		AttemptRawSocket:     rawSocket,
		AttemptSignalParent:  func() (string, error) { return signalParent(a.Parent) },
		AttemptTIOCSTI:       tiocsti,
		AttemptParentEnviron: func() (string, error) { return readSome("/proc/" + strconv.Itoa(a.Parent) + "/environ") },
		AttemptFindVariable:  func() (string, error) { return findVariable(a.Variable) },
	}
	out := make([]try, 0, len(Attempts))
	for _, at := range Attempts {
		detail, err := attempts[at]()
		if err != nil {
			out = append(out, try{at, false, err.Error()})
			continue
		}
		out = append(out, try{at, true, detail})
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		return 1
	}
	return 0
}

func readSome(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b := make([]byte, 16)
	n, err := f.Read(b)
	if err != nil && n == 0 {
		return "", err
	}
	return fmt.Sprintf("read %d bytes of %s", n, path), nil
}

func writeOutside(dir string) (string, error) {
	path := filepath.Join(dir, "written-by-the-server")
	if err := os.WriteFile(path, []byte("escaped\n"), 0o600); err != nil {
		return "", err
	}
	return "wrote " + path, nil
}

// execDropped writes a script where the server may write and runs it.
func execDropped(dir string) (string, error) {
	path := filepath.Join(dir, "dropped.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\nexit 0\n"), 0o700); err != nil {
		return "", fmt.Errorf("could not even write it: %w", err)
	}
	if err := exec.Command(path).Run(); err != nil {
		return "", err
	}
	return "ran " + path, nil
}

// execMemfd copies true into a memory file, on no mount, and executes it.
func execMemfd() (string, error) {
	b, err := os.ReadFile("/bin/true")
	if err != nil {
		return "", fmt.Errorf("could not even read /bin/true: %w", err)
	}
	fd, err := unix.MemfdCreate("dropped", unix.MFD_CLOEXEC)
	if err != nil {
		return "", fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "memfd")
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		return "", err
	}
	// The child is given it as its fd 3 (CLOEXEC is for this process).
	cmd := exec.Command("/proc/self/fd/3")
	cmd.ExtraFiles = []*os.File{f}
	if err := cmd.Run(); err != nil {
		return "", err
	}
	return "ran a binary from a memory file", nil
}

func dial(network, addr string, timeout time.Duration) (string, error) {
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return "", err
	}
	c.Close()
	return "connected to " + addr, nil
}

func sendUDP(addr string, timeout time.Duration) (string, error) {
	c, err := net.DialTimeout("udp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if _, err := c.Write([]byte("doctor")); err != nil {
		return "", err
	}
	return "sent a datagram to " + addr, nil
}

// rawHelperArg makes the self-test a helper that opens a raw socket.
const rawHelperArg = "raw-socket"

// rawSocket opens a raw socket; where the user may not, it tries again in
// a child in new user and network namespaces, where it is root: the way a
// server without the sandbox gets one.
func rawSocket() (string, error) {
	out, err := openRaw()
	if err == nil {
		return out, nil
	}
	self, xerr := os.Executable()
	if xerr != nil {
		return "", err
	}
	cmd := exec.Command(self, SelfTestArg, rawHelperArg)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if nerr := cmd.Run(); nerr != nil {
		return "", fmt.Errorf("%w; in a new user namespace: %w", err, exitErr(nerr, stderr.String()))
	}
	return "opened a raw ICMP socket in a new user namespace", nil
}

func openRaw() (string, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP)
	if err != nil {
		return "", fmt.Errorf("socket: %w", err)
	}
	unix.Close(fd)
	return "opened a raw ICMP socket", nil
}

func signalParent(pid int) (string, error) {
	if err := unix.Kill(pid, unix.SIGURG); err != nil {
		return "", fmt.Errorf("kill %d: %w", pid, err)
	}
	return fmt.Sprintf("signalled PID %d", pid), nil
}

// tiocsti opens the controlling terminal and asks to type the character
// at address 0: EFAULT means the kernel would have typed it.
func tiocsti() (string, error) {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), unix.TIOCSTI, 0)
	if errno == unix.EFAULT {
		return "the terminal accepts TIOCSTI", nil
	}
	if errno == 0 {
		return "the terminal accepted TIOCSTI", nil
	}
	return "", fmt.Errorf("ioctl TIOCSTI: %w", errno)
}

func findVariable(name string) (string, error) {
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, name+"=") {
			return "found " + name + " in its environment", nil
		}
	}
	return "", errors.New("not in its environment")
}

// exitErr makes an exec error readable.
func exitErr(err error, stderr string) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return fmt.Errorf("killed by %v: %s", ws.Signal(), strings.TrimSpace(stderr))
		}
	}
	if s := strings.TrimSpace(stderr); s != "" {
		return fmt.Errorf("%w: %s", err, s)
	}
	return err
}
