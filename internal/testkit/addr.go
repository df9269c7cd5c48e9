package testkit

import (
	"net"
	"sync"
	"testing"
)

// handedOut holds every address FreeAddr returned in this process. It is
// package state on purpose: the ports it guards are the process's to
// hand out, whichever test asks.
var handedOut struct {
	sync.Mutex
	addrs map[string]bool
}

// FreeAddr returns a loopback address, host and port, whose port was free
// just now and that it has not returned before in this process: the
// system may give a port it just gave again, and two servers of one test
// (replicas, say) were then told to listen on the same one. Another
// process may still take it before the caller listens on it; tests that
// can listen themselves should pass a listener instead.
func FreeAddr(t testing.TB) string {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.addrs == nil {
		handedOut.addrs = map[string]bool{}
	}
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("finding a free loopback port: %v", err)
		}
		addr := ln.Addr().String()
		ln.Close()
		if !handedOut.addrs[addr] {
			handedOut.addrs[addr] = true
			return addr
		}
	}
	t.Fatal("finding a free loopback port: 100 tries gave only ports handed out already")
	return ""
}
