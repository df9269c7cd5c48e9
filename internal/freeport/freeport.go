// Package freeport hands out loopback addresses whose port was free a
// moment ago, for the tests (internal/testkit.FreeAddr) and the bench,
// which start servers told where to listen. It is not test code, so the
// bench can use it without importing internal/testkit.
package freeport

import (
	"errors"
	"fmt"
	"net"
	"sync"
)

// handedOut holds every address Addr returned in this process. It is
// package state on purpose: the ports it guards are the process's to
// hand out, whoever asks.
var handedOut struct {
	sync.Mutex
	addrs map[string]bool
}

// Addr returns a loopback address, host and port, whose port was free
// just now and that it has not returned before in this process: the
// system may give a port it just gave again, and two servers (replicas,
// say) were then told to listen on the same one. Another process may
// still take it before the caller listens on it; a caller that can listen
// itself should pass a listener instead. It is safe for concurrent use.
func Addr() (string, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.addrs == nil {
		handedOut.addrs = map[string]bool{}
	}
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", fmt.Errorf("finding a free loopback port: %w", err)
		}
		addr := ln.Addr().String()
		ln.Close()
		if !handedOut.addrs[addr] {
			handedOut.addrs[addr] = true
			return addr, nil
		}
	}
	return "", errors.New("finding a free loopback port: 100 tries gave only ports handed out already")
}
