package audit

import (
	"bytes"
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"
)

// TestPeriodicCheckpointIsWrittenUnderFsyncLoad keeps a log that syncs
// every line busy with writers that never pause, so that group commit
// always has a batch queued, and waits for checkpoints due by
// checkpoint_interval alone (checkpoint_every is out of reach): a busy log
// must not put off its periodic checkpoint until the load stops. (When
// the ticker waited for the sink to be free, 50 checkpoints 20 ms apart
// took far more than 10 s: 13 to 29 came in that time.) The log then
// verifies with the key and the witness: each checkpoint covers exactly
// the lines before it, all of them synced before it was signed.
func TestPeriodicCheckpointIsWrittenUnderFsyncLoad(t *testing.T) {
	t.Parallel()
	s := newSignedLog(t)
	l := s.open(t, Config{Fsync: true, CheckpointEvery: 1 << 30, CheckpointInterval: 20 * time.Millisecond})
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				if err := l.Write(context.Background(), decisionEvent(w*1_000_000+i)); err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
			}
		})
	}
	const want = 50
	got := 0
	for deadline := time.Now().Add(10 * time.Second); got < want && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		got = witnessed(t, s.witness)
	}
	stop()
	wg.Wait()
	if got < want {
		t.Fatalf("%d checkpoints in 10 s of fsync load with a checkpoint interval of 20 ms, want %d at least", got, want)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := s.verify(t)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if r.Checkpoints < want || r.Signed != int64(r.Lines-1) || r.Witnessed != r.Signed {
		t.Errorf("verify: %+v, want every line but the last checkpoint signed and witnessed", r)
	}
}

// witnessed counts the checkpoints in the witness file at path, one a
// line: 0 before the first.
func witnessed(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(data, []byte("\n"))
}

// BenchmarkTreeAdd is what the Merkle tree adds to each line written: its
// RFC 6962 leaf hash (one SHA-256 block) and, on average, one node hash
// (two blocks).
func BenchmarkTreeAdd(b *testing.B) {
	var t tree
	var sum [32]byte
	for b.Loop() {
		sum[0]++
		t.add(sum)
	}
}

// BenchmarkCheckpoint is one checkpoint of a 1000-line tree: signing it,
// writing its line to the log and to a witness file. A log that signs
// every 1000 lines pays a thousandth of it per line.
func BenchmarkCheckpoint(b *testing.B) {
	dir := b.TempDir()
	l, err := Open(Config{Path: dir + "/log/audit.jsonl", Witness: dir + "/witness.jsonl", CheckpointEvery: 1 << 30}, &Options{Signer: newKey(b).Signer})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	var sum [32]byte
	for range 1000 {
		l.cp.tree.add(sum)
	}
	for b.Loop() {
		l.mu.Lock()
		l.cp.tree.add(sum) // a line since the last checkpoint, as a real one has
		err := l.checkpoint(b.Context())
		l.mu.Unlock()
		if err != nil {
			b.Fatal(err)
		}
	}
}
