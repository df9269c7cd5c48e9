//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func uintptrOf(p *byte) uintptr { return uintptr(unsafe.Pointer(p)) }

func helper(name string, args []string) int {
	switch name {
	case "raw-child":
		return rawChild()
	case "true":
		return 0
	case "daemon-child":
		return daemonChild(args)
	case "daemon-loop":
		return daemonLoop(args)
	case "memfd-execveat":
		return memfdExecAtHelper()
	}
	fmt.Fprintln(os.Stderr, "unknown helper", name)
	return 2
}

func signalPID(pid, _ string) (string, error) {
	n, err := strconv.Atoi(pid)
	if err != nil {
		return "", err
	}
	if err := syscall.Kill(n, syscall.SIGUSR1); err != nil {
		return "", err
	}
	return "sent SIGUSR1 to " + pid, nil
}

// signalAll sends SIGUSR1 to every process it may signal. kill(-1)
// succeeds even when each signal was refused, so only the receiver can
// tell whether it worked.
func signalAll(_, _ string) (string, error) {
	if err := syscall.Kill(-1, syscall.SIGUSR1); err != nil {
		return "", err
	}
	return "kill(-1) returned", nil
}

func ptracePID(pid, _ string) (string, error) {
	n, err := strconv.Atoi(pid)
	if err != nil {
		return "", err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := syscall.PtraceAttach(n); err != nil {
		return "", err
	}
	var ws syscall.WaitStatus
	syscall.Wait4(n, &ws, syscall.WALL, nil)
	syscall.PtraceDetach(n)
	return "attached to " + pid, nil
}

// tiocsti pushes a command into the terminal's input: through /dev/tty,
// then through each standard descriptor that is a terminal.
func tiocsti(_, _ string) (string, error) {
	var errs []error
	push := func(fd int, what string) bool {
		for _, c := range []byte("id\n") {
			if err := unix.IoctlSetPointerInt(fd, unix.TIOCSTI, int(c)); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", what, err))
				return false
			}
		}
		return true
	}
	if f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err != nil {
		errs = append(errs, err)
	} else {
		defer f.Close()
		if push(int(f.Fd()), "/dev/tty") {
			return "typed into /dev/tty", nil
		}
	}
	for fd := 0; fd <= 2; fd++ {
		if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err == nil && push(fd, "fd "+strconv.Itoa(fd)) {
			return "typed into fd " + strconv.Itoa(fd), nil
		}
	}
	return "", errors.Join(errs...)
}

// tiocstiHighBits is tiocsti with a high bit set in the request, which
// the kernel ignores (it reads an unsigned int) and a filter comparing 64
// bits would not match.
func tiocstiHighBits(_, _ string) (string, error) {
	var errs []error
	fds := []int{0, 1, 2}
	if f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err == nil {
		defer f.Close()
		fds = append([]int{int(f.Fd())}, fds...)
	} else {
		errs = append(errs, err)
	}
	for _, fd := range fds {
		c := byte('x')
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), 1<<32|unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
		if errno == 0 {
			return "typed into fd " + strconv.Itoa(fd), nil
		}
		errs = append(errs, fmt.Errorf("fd %d: %w", fd, errno))
	}
	return "", errors.Join(errs...)
}

// daemon double-forks a child that leaves the session and appends to
// mark every 100 ms, to be found alive after the server stopped.
func daemon(mark, _ string) (string, error) {
	cmd := exec.Command("/proc/self/exe", "daemon-child", mark)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Run(); err != nil {
		// A sandbox may forbid a new session; a daemon makes do.
		cmd = exec.Command("/proc/self/exe", "daemon-child", mark)
		if err := cmd.Run(); err != nil {
			return "", err
		}
	}
	return "daemon started", nil
}

func daemonChild(args []string) int {
	cmd := exec.Command("/proc/self/exe", "daemon-loop", args[0])
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		cmd = exec.Command("/proc/self/exe", "daemon-loop", args[0])
		if err := cmd.Start(); err != nil {
			return 1
		}
	}
	return 0
}

func daemonLoop(args []string) int {
	signalIgnore()
	for range 3000 {
		f, err := os.OpenFile(args[0], os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err == nil {
			f.WriteString("alive\n")
			f.Close()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return 0
}

// forkBomb starts n sleeping children and kills them again; it succeeds
// when all n started.
func forkBomb(n, _ string) (string, error) {
	count, err := strconv.Atoi(n)
	if err != nil {
		return "", err
	}
	var kids []*exec.Cmd
	defer func() {
		for _, k := range kids {
			k.Process.Kill()
			k.Wait()
		}
	}()
	for i := range count {
		k := exec.Command("sleep", "30")
		if err := k.Start(); err != nil {
			return "", fmt.Errorf("child %d of %d: %w", i+1, count, err)
		}
		kids = append(kids, k)
	}
	return fmt.Sprintf("%d children running", count), nil
}

// memoryBomb maps and touches n MiB.
func memoryBomb(n, _ string) (string, error) {
	mib, err := strconv.Atoi(n)
	if err != nil {
		return "", err
	}
	b, err := unix.Mmap(-1, 0, mib<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return "", fmt.Errorf("mapping %d MiB: %w", mib, err)
	}
	defer unix.Munmap(b)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	return fmt.Sprintf("%d MiB allocated", mib), nil
}

// capabilities succeeds when the server holds any capability (the
// launcher's, left over), or may raise one into its ambient set.
func capabilities(_, _ string) (string, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return "", err
	}
	for i, d := range data {
		if d.Effective|d.Permitted|d.Inheritable != 0 {
			return fmt.Sprintf("holds capabilities (word %d: effective %#x, permitted %#x)", i, d.Effective, d.Permitted), nil
		}
	}
	for _, c := range []struct {
		name string
		cap  uintptr
	}{{"CAP_SYS_ADMIN", unix.CAP_SYS_ADMIN}, {"CAP_NET_ADMIN", unix.CAP_NET_ADMIN}} {
		if v, _ := unix.PrctlRetInt(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_IS_SET, c.cap, 0, 0); v == 1 {
			return "holds " + c.name + " as ambient", nil
		}
	}
	return "", errors.New("no capability")
}

// killParent sends SIGKILL to the server's parent: mcpwarden unsandboxed,
// the launcher's supervisor in tier landlock, none in a PID namespace.
func killParent(_, _ string) (string, error) {
	ppid := os.Getppid()
	if ppid <= 1 {
		return "", fmt.Errorf("no parent to kill (%d)", ppid)
	}
	if err := syscall.Kill(ppid, syscall.SIGKILL); err != nil {
		return "", err
	}
	return "killed its parent " + strconv.Itoa(ppid), nil
}
