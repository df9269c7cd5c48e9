//go:build unix

package testkit

import "syscall"

// Pause stops the server with SIGSTOP, as a stalled host would: it keeps
// its connections and its port but answers nothing until Resume. The
// test's cleanup resumes it.
func (r *RedisServer) Pause() {
	r.t.Helper()
	r.signal(syscall.SIGSTOP)
	r.t.Cleanup(r.Resume)
}

// Resume continues a paused server (SIGCONT).
func (r *RedisServer) Resume() { r.signal(syscall.SIGCONT) }

func (r *RedisServer) signal(sig syscall.Signal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		_ = r.cmd.Process.Signal(sig)
	}
}
