//go:build linux || darwin

package h1

import (
	"net"
	"syscall"
)

// open reports whether the server has neither closed nc nor sent anything
// on it, without waiting: a peek that finds nothing to read yet.
func open(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	waiting := false
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		waiting = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true // done: never wait for the connection to be readable
	})
	return err == nil && waiting
}

// canPeek says that open can tell a closed connection from an open one.
const canPeek = true
