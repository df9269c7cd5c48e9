package audit

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// A gateSink is a stand-in lineBatcher that keeps what it stores in memory:
// each WriteLines first takes a value from gate (when gate is set), so a
// test can hold a batch in the sink while more Writes queue, and stores at
// most storeLines lines of a call (all when negative) before failing.
type gateSink struct {
	gate       chan struct{}
	mu         sync.Mutex
	calls      [][]byte
	stored     []byte
	storeLines int
}

var errSinkCut = errors.New("disk full")

func (s *gateSink) WriteLines(_ context.Context, lines []byte) (int, error) {
	if s.gate != nil {
		<-s.gate
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, bytes.Clone(lines))
	if s.storeLines < 0 {
		s.stored = append(s.stored, lines...)
		return len(lines), nil
	}
	n := 0
	for range s.storeLines {
		i := bytes.IndexByte(lines[n:], '\n')
		if i < 0 {
			break
		}
		n += i + 1
	}
	s.stored = append(s.stored, lines[:n]...)
	return n, errSinkCut
}

func (s *gateSink) Write(ctx context.Context, line []byte) error {
	_, err := s.WriteLines(ctx, line)
	return err
}

func (s *gateSink) Close() error { return nil }

func (s *gateSink) syncs() bool { return true }

// verifyBytes writes lines to a file and verifies its chain.
func verifyBytes(t *testing.T, lines []byte) int {
	t.Helper()
	path := filepath.Join(t.TempDir(), "copy.jsonl")
	if err := os.WriteFile(path, lines, 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := Verify(path)
	if err != nil {
		t.Fatalf("Verify: %v\n%s", err, lines)
	}
	return n
}

// holdFirstWrite starts a Write on l and waits until it is in s, held at
// s's gate; the Write's outcome arrives on the channel returned.
func holdFirstWrite(t *testing.T, l *Log) chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- l.Write(t.Context(), decisionEvent(0)) }()
	for !l.writing() {
		time.Sleep(time.Millisecond)
	}
	return done
}

// queued is how many events wait in l's queue.
func queued(l *Log) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.batch.queue == nil {
		return 0
	}
	return len(l.batch.queue.bufs)
}

func TestWritesQueuedDuringAWriteAreStoredTogether(t *testing.T) {
	t.Parallel()
	s := &gateSink{gate: make(chan struct{}), storeLines: -1}
	l := New(s, Config{})
	first := holdFirstWrite(t, l)
	errs := make(chan error, 5)
	for i := 1; i <= 5; i++ {
		go func() { errs <- l.Write(t.Context(), decisionEvent(i)) }()
	}
	for queued(l) != 5 {
		time.Sleep(time.Millisecond)
	}
	s.gate <- struct{}{} // the first line
	s.gate <- struct{}{} // the five queued behind it, in one call
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := len(s.calls); got != 2 {
		t.Fatalf("the sink was called %d times, want 2 (one line, then five together)", got)
	}
	if got := bytes.Count(s.calls[1], []byte("\n")); got != 5 {
		t.Fatalf("the second call stored %d lines, want 5", got)
	}
	if n := verifyBytes(t, s.stored); n != 6 {
		t.Fatalf("verified %d lines, want 6", n)
	}
}

// TestABatchCutShortChainsOnlyWhatWasStored stores the first two lines of a
// batch of four and fails: the two must be chained, the other two reported
// failed and counted, and the next line must follow a lost event chained to
// the second line, so that the log verifies and its gap is recorded.
func TestABatchCutShortChainsOnlyWhatWasStored(t *testing.T) {
	t.Parallel()
	s := &gateSink{gate: make(chan struct{}), storeLines: -1}
	l := New(s, Config{})
	first := holdFirstWrite(t, l)
	errs := make(chan error, 4)
	for i := 1; i <= 4; i++ {
		go func() { errs <- l.Write(t.Context(), decisionEvent(i)) }()
	}
	for queued(l) != 4 {
		time.Sleep(time.Millisecond)
	}
	s.gate <- struct{}{}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.storeLines = 2
	s.mu.Unlock()
	s.gate <- struct{}{}
	failed := 0
	for range 4 {
		if err := <-errs; errors.Is(err, errSinkCut) {
			failed++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if failed != 2 {
		t.Fatalf("%d Writes failed, want 2", failed)
	}
	s.mu.Lock()
	s.gate, s.storeLines = nil, -1
	s.mu.Unlock()
	if err := l.Write(t.Context(), decisionEvent(5)); err != nil {
		t.Fatal(err)
	}
	if n := verifyBytes(t, s.stored); n != 5 {
		t.Fatalf("verified %d lines, want 5 (3 stored, the lost event, the last)", n)
	}
	events := readEventsFrom(t, s.stored)
	if lost := events[3]; lost.Event != KindLost || lost.Lost != 2 {
		t.Fatalf("line 4 is %+v, want a lost event counting 2", lost)
	}
}

// TestCloseWaitsForTheBatchBeingWritten closes the log while a batch is
// in the sink: Close must not close the sink under it, and the Write must
// succeed.
func TestCloseWaitsForTheBatchBeingWritten(t *testing.T) {
	t.Parallel()
	s := &gateSink{gate: make(chan struct{}), storeLines: -1}
	l := New(s, Config{})
	written := holdFirstWrite(t, l)
	closed := make(chan error, 1)
	go func() { closed <- l.Close() }()
	select {
	case <-closed:
		t.Fatal("Close returned while a batch was being written")
	case <-time.After(50 * time.Millisecond):
	}
	s.gate <- struct{}{}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if err := l.Write(t.Context(), decisionEvent(1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after Close = %v, want ErrClosed", err)
	}
}

func TestWriteLinesRotatesBetweenLines(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := OpenFile(path, FileOptions{MaxBytes: 10, Fsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lines := []byte("aaaa\nbbbb\ncccccccccccccc\ndd\n")
	n, err := s.WriteLines(t.Context(), lines)
	if err != nil || n != len(lines) {
		t.Fatalf("WriteLines = %d, %v; want %d, nil", n, err, len(lines))
	}
	files, err := Files(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(b))
	}
	want := []string{"aaaa\nbbbb\n", "cccccccccccccc\n", "dd\n"}
	if len(got) != len(want) {
		t.Fatalf("files hold %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("files hold %q, want %q", got, want)
		}
	}
}

// readEventsFrom decodes each line of b.
func readEventsFrom(t *testing.T, b []byte) []Event {
	t.Helper()
	path := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return readEvents(t, []string{path})
}

// writing reports whether a Write is writing a batch.
func (l *Log) writing() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.batch.writing
}

func TestConcurrentSyncedWritesAreGroupedAndChained(t *testing.T) {
	t.Parallel()
	l, path := openTestLog(t, Config{Fsync: true})
	if l.batch == nil {
		t.Fatal("a log that syncs every line has no group commit")
	}
	const writers, each = 16, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := l.Write(t.Context(), decisionEvent(w*each+i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n, err := Verify(path); err != nil || n != writers*each {
		t.Fatalf("Verify = %d, %v; want %d, nil", n, err, writers*each)
	}
}

func TestGroupCommitOnlyWhenSyncing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		want bool
	}{
		{"a file with fsync groups", Config{Fsync: true}, true},
		{"a file without fsync writes line by line", Config{}, false},
		{"stderr writes line by line", Config{Sink: SinkStderr}, false},
		{"none writes line by line", Config{Sink: SinkNone}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var l *Log
			if tt.cfg.Sink == "" {
				l, _ = openTestLog(t, tt.cfg)
			} else {
				var err error
				if l, err = Open(tt.cfg, &Options{Stderr: new(bytes.Buffer)}); err != nil {
					t.Fatal(err)
				}
				defer l.Close()
			}
			if got := l.batch != nil; got != tt.want {
				t.Errorf("group commit = %v, want %v", got, tt.want)
			}
		})
	}
}
