//go:build linux

package main

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func tcpConnect(addr, _ string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if _, err := c.Write([]byte("hello from the sandbox\n")); err != nil {
		return "", err
	}
	return "connected to " + addr, nil
}

func tcpBind(_, _ string) (string, error) {
	l, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return "listening on " + l.Addr().String(), nil
}

func udpSend(addr, _ string) (string, error) {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if _, err := c.Write([]byte("udp from the sandbox")); err != nil {
		return "", err
	}
	return "sent to " + addr, nil
}

// udpSendHighBits asks for AF_INET with a high bit set in the family
// argument, which the kernel ignores (it reads an int) and a filter that
// compares 64 bits would not match.
func udpSendHighBits(addr, _ string) (string, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return "", err
	}
	fd, _, errno := unix.Syscall(unix.SYS_SOCKET, uintptr(1<<32|unix.AF_INET), unix.SOCK_DGRAM, 0)
	if errno != 0 {
		return "", fmt.Errorf("socket: %w", errno)
	}
	defer unix.Close(int(fd))
	sa := &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	if err := unix.Sendto(int(fd), []byte("udp with high bits"), 0, sa); err != nil {
		return "", fmt.Errorf("sendto: %w", err)
	}
	return "sent to " + addr, nil
}

// rawSocket opens a raw socket: directly, or (as an unprivileged user) in
// a user and network namespace of its own.
func rawSocket(_, _ string) (string, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP)
	if err == nil {
		unix.Close(fd)
		return "raw socket", nil
	}
	cmd := exec.Command("/proc/self/exe", "raw-child")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	out, cerr := cmd.CombinedOutput()
	if cerr != nil {
		return "", fmt.Errorf("direct: %v; in a new user namespace: %v %s", err, cerr, trim(out))
	}
	return "raw socket in a user namespace of its own", nil
}

func rawChild() int {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	unix.Close(fd)
	return 0
}

func mptcpSocket(addr, _ string) (string, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 262)
	if err != nil {
		return "", err
	}
	unix.Close(fd)
	return "MPTCP socket", nil
}

func unixConnect(path, _ string) (string, error) {
	c, err := net.DialTimeout("unix", path, 2*time.Second)
	if err != nil {
		return "", err
	}
	c.Close()
	return "connected to " + path, nil
}

func abstractConnect(name, _ string) (string, error) {
	c, err := net.DialTimeout("unix", "@"+name, 2*time.Second)
	if err != nil {
		return "", err
	}
	c.Close()
	return "connected to @" + name, nil
}

// ioURing sets up an io_uring, whose operations bypass a seccomp filter.
func ioURing(_, _ string) (string, error) {
	var params [120]byte
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 4, uintptrOf(&params[0]), 0)
	if errno != 0 {
		return "", fmt.Errorf("io_uring_setup: %w", errno)
	}
	unix.Close(int(fd))
	return "io_uring ready", nil
}

// newUserNS starts a child in new user namespace, where it would hold
// every capability.
func newUserNS(_, _ string) (string, error) {
	cmd := exec.Command("/proc/self/exe", "true")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	if err := cmd.Run(); err != nil {
		return "", err
	}
	if err := unix.Unshare(unix.CLONE_NEWUSER); err != nil && !errors.Is(err, unix.EINVAL) {
		return "", fmt.Errorf("unshare: %w", err)
	}
	return "root in a user namespace of its own", nil
}
