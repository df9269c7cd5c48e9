//go:build !unix

package upstream

import "syscall"

// procAttr is nil outside Unix: the child gets no process group of its
// own (Windows would need a Job object for that), so stopping it is best
// effort — its stdin is closed and it is killed, and what it started
// itself is left to exit when its own stdin or stdout closes. There is no
// parent-death signal either: a child outlives a mcpwarden that is killed
// unless it exits when its stdin closes, as MCP stdio servers should.
func procAttr() *syscall.SysProcAttr { return nil }
