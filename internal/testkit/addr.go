package testkit

import (
	"net"
	"testing"
)

// FreeAddr returns a loopback address, host and port, whose port was free
// just now. Another process may take it before the caller listens on it;
// tests that can listen themselves should pass a listener instead.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free loopback port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
