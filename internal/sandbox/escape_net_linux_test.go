package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"runtime"
	"testing"
)

func TestSandboxStopsTCPConnectToLoopback(t *testing.T) {
	t.Parallel()
	addr := listener(t)
	checkEscape(t, tool("tcp_connect", func(w world) (string, string) { return addr, "" }))
}

func TestSandboxStopsTCPListening(t *testing.T) {
	t.Parallel()
	checkEscape(t, tool("tcp_bind", func(w world) (string, string) { return "", "" }))
}

func TestSandboxStopsUDPSendToLoopback(t *testing.T) {
	t.Parallel()
	addr := udpListener(t)
	checkEscape(t, tool("udp_send", func(w world) (string, string) { return addr, "" }))
}

// The family argument is an int: a filter comparing all 64 bits would let
// AF_INET with a high bit set through.
func TestSandboxStopsUDPSocketWithHighBitsInFamily(t *testing.T) {
	t.Parallel()
	addr := udpListener(t)
	checkEscape(t, tool("udp_send_high", func(w world) (string, string) { return addr, "" }))
}

// The filter is written for amd64 numbers; an i386 system call (int 0x80)
// must not slip past it.
func TestSandboxStopsI386SystemCalls(t *testing.T) {
	t.Parallel()
	if runtime.GOARCH != "amd64" {
		t.Skip("the i386 table is an amd64 kernel's")
	}
	checkEscape(t, tool("i386_socket", func(w world) (string, string) { return "", "" }))
}

func TestSandboxStopsRawSocket(t *testing.T) {
	t.Parallel()
	checkEscape(t, tool("raw_socket", func(w world) (string, string) { return "", "" }))
}

func TestSandboxStopsMPTCPSocket(t *testing.T) {
	t.Parallel()
	checkEscape(t, tool("mptcp_socket", func(w world) (string, string) { return "", "" }))
}

func TestSandboxStopsConnectingToPathnameUnixSocket(t *testing.T) {
	t.Parallel()
	checkEscape(t, func(t *testing.T, w world, m mode) string {
		path := w.root + "/agent.sock"
		unixListener(t, path)
		return start(t, w, m, sessionOpts{}).call("unix_connect", path, "")
	})
}

func TestSandboxStopsConnectingToAbstractUnixSocket(t *testing.T) {
	t.Parallel()
	name := abstractListener(t)
	checkEscape(t, tool("abstract_connect", func(w world) (string, string) { return name, "" }))
}

// With unix sockets allowed, Landlock's scoping (or the network
// namespace) still keeps abstract sockets outside out of reach.
func TestSandboxStopsAbstractUnixSocketWhenUnixSocketsAreAllowed(t *testing.T) {
	t.Parallel()
	name := abstractListener(t)
	checkEscape(t, func(t *testing.T, w world, m mode) string {
		p := w.policy(m)
		p.UnixSockets = true
		return start(t, w, m, sessionOpts{policy: &p}).call("abstract_connect", name, "")
	})
}

func TestSandboxStopsIOURing(t *testing.T) {
	t.Parallel()
	checkEscape(t, tool("io_uring", func(w world) (string, string) { return "", "" }))
}

func TestSandboxStopsNewUserNamespace(t *testing.T) {
	t.Parallel()
	checkEscape(t, tool("new_userns", func(w world) (string, string) { return "", "" }))
}

func udpListener(t *testing.T) string {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.LocalAddr().String()
}

func unixListener(t *testing.T, path string) {
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	os.Chmod(path, 0o777)
	go acceptAll(l)
}

func abstractListener(t *testing.T) string {
	b := make([]byte, 8)
	rand.Read(b)
	name := "mcpwarden-test-" + hex.EncodeToString(b)
	l, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go acceptAll(l)
	return name
}

func acceptAll(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}
