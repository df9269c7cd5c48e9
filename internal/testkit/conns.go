package testkit

import (
	"net"
	"testing"
)

// Loopback listens on a free port of 127.0.0.1 until t ends.
func Loopback(t testing.TB) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// ServeConns accepts connections on l until l is closed, which it is when
// t ends, and hands each to handle on a goroutine of its own, closing the
// connection when handle returns: the peer a test scripts byte by byte,
// where an http.Server would answer for it.
func ServeConns(t testing.TB, l net.Listener, handle func(net.Conn)) {
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
}
