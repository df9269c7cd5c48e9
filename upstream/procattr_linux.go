package upstream

import "syscall"

// procAttr puts a stdio child in a process group of its own (so that
// stopping it stops what it started) and has the kernel SIGKILL it when
// the thread that started it exits (see spawner): a child that ignores
// its stdin closing and SIGTERM still dies with mcpwarden, even when
// mcpwarden is killed with SIGKILL. SIGKILL, not SIGTERM: a child that
// ignores SIGTERM is the one that would be left behind. Only the child
// gets it; what the child started itself sees its stdin and stdout close
// and is stopped by the child, as when mcpwarden stops it.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
