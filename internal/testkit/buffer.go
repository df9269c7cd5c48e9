package testkit

import (
	"bytes"
	"sync"
)

// A LockedBuffer is a bytes.Buffer that goroutines may write to while the
// test reads it: a logger's or a child process's stderr. The zero value is
// an empty buffer ready to use.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p to the buffer.
func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
