//go:build unix

package audit

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestALockKeptByAForkedChildIsWaitedFor: a child process forked while the
// log was open (by any goroutine: mcpwarden starts upstreams, the tests
// start binaries) holds a copy of the lock's descriptor until it starts
// its program, and the lock with it, after the writer closed the log. A
// writer opening the log then waits for that rather than failing with
// ErrLocked (TestAuditRepairCommand failed so once under -race in CI).
func TestALockKeptByAForkedChildIsWaitedFor(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	lock, err := takeLock(path)
	if err != nil {
		t.Fatal(err)
	}
	child, err := syscall.Dup(int(lock.Fd())) // the forked child's copy
	if err != nil {
		t.Fatal(err)
	}
	lock.Close()
	go func() {
		time.Sleep(50 * time.Millisecond) // the child starts its program
		syscall.Close(child)
	}()
	l, err := Open(Config{Path: path}, nil)
	if err != nil {
		t.Fatalf("Open once the writer closed the log: %v", err)
	}
	l.Close()
}
