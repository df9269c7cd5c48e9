//go:build unix && !linux

package upstream

import "syscall"

// procAttr puts a stdio child in a process group of its own, so that
// stopping it stops what it started. Outside Linux there is no
// parent-death signal: a child outlives a mcpwarden killed with SIGKILL
// unless it exits when its stdin closes, as MCP stdio servers should.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
