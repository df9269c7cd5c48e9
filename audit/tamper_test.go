package audit

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// A signedLog is a log written with signed checkpoints, its witness in
// another folder, and the public key to verify both.
type signedLog struct {
	path, witness string
	key           SigningKey
	pub           note.Verifiers
}

func newKey(t testing.TB) SigningKey {
	t.Helper()
	skey, _, err := note.GenerateKey(rand.Reader, KeyName)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ParseSigningKey(skey)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newSignedLog(t *testing.T) *signedLog {
	t.Helper()
	k := newKey(t)
	pub, err := ParseVerifierKey(k.Public)
	if err != nil {
		t.Fatal(err)
	}
	return &signedLog{
		path:    filepath.Join(t.TempDir(), "audit.jsonl"),
		witness: filepath.Join(t.TempDir(), "witness.jsonl"),
		key:     k,
		pub:     pub,
	}
}

// open opens the log for writing, signing a checkpoint every 10 events.
func (s *signedLog) open(t *testing.T, cfg Config) *Log {
	t.Helper()
	cfg.Path, cfg.Witness = s.path, s.witness
	if cfg.CheckpointEvery == 0 {
		cfg.CheckpointEvery = 10
	}
	l, err := Open(cfg, &Options{Signer: s.key.Signer})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// write writes n decision events to a new log and closes it.
func (s *signedLog) write(t *testing.T, n int) {
	t.Helper()
	l := s.open(t, Config{})
	for i := range n {
		if err := l.Write(context.Background(), decisionEvent(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// verify verifies the log with the key and the witness.
func (s *signedLog) verify(t *testing.T) (VerifyResult, error) {
	t.Helper()
	w, err := ReadWitnessFile(s.witness, s.pub)
	if err != nil {
		t.Fatal(err)
	}
	files, err := Files(s.path)
	if err != nil {
		t.Fatal(err)
	}
	return VerifyWith(VerifyOptions{Key: s.pub, Witness: w}, files...)
}

// rewrite writes the lines back as a fresh, valid chain, after edit
// changes their events (and may drop some, returning false).
func (s *signedLog) rewrite(t *testing.T, edit func(i int, e *Event) bool) {
	t.Helper()
	lines := readLines(t, s.path)
	if err := os.Remove(s.path); err != nil {
		t.Fatal(err)
	}
	fs, err := OpenFile(s.path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := New(fs, Config{})
	for i, line := range lines {
		var e Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		if !edit(i, &e) {
			continue
		}
		if err := l.Write(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func writeLines(t *testing.T, path string, lines []string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// wantVerifyError checks that err is a *VerifyError at line, wrapping want.
func wantVerifyError(t *testing.T, err, want error, line int) {
	t.Helper()
	var ve *VerifyError
	if !errors.As(err, &ve) || !errors.Is(err, want) || ve.Line != line {
		t.Fatalf("verify error = %v, want %v at line %d", err, want, line)
	}
}

func TestTreeRootIsTheRootTlogComputes(t *testing.T) {
	t.Parallel()
	var tr tree
	var store hashStore
	for i := range 70 {
		var sum [32]byte
		sum[0], sum[1] = byte(i), byte(i>>8)
		hs, err := tlog.StoredHashesForRecordHash(store.n, tlog.RecordHash(sum[:]), &store)
		if err != nil {
			t.Fatal(err)
		}
		store.hashes, store.n = append(store.hashes, hs...), store.n+1
		tr.add(sum)
		want, err := tlog.TreeHash(store.n, &store)
		if err != nil {
			t.Fatal(err)
		}
		if tr.root() != want {
			t.Fatalf("root of %d leaves differs from tlog's", store.n)
		}
		if again, err := treeFromEdges(tr.n, tr.edgeStrings(), want); err != nil || again.root() != want {
			t.Fatalf("tree of %d leaves does not round-trip through its subtrees: %v", tr.n, err)
		}
	}
}

func TestSignedLogVerifiesWithItsKeyAndWitness(t *testing.T) {
	t.Parallel()
	s := newSignedLog(t)
	s.write(t, 35)
	res, err := s.verify(t)
	if err != nil {
		t.Fatal(err)
	}
	// Checkpoints after 10, 21 and 32 lines, and at Close over 38.
	if res.Lines != 39 || res.Checkpoints != 4 || res.Signed != 38 || res.Unsigned != 0 || res.Witnessed != 38 {
		t.Errorf("result %+v, want 39 lines, 4 checkpoints, the last of 38 lines, witnessed", res)
	}
	// Reopened, the tree goes on from the log.
	s.write(t, 5)
	if res, err = s.verify(t); err != nil || res.Checkpoints != 5 || res.Witnessed != 44 {
		t.Errorf("after reopening: %+v, %v; want 5 checkpoints, the witness at 44", res, err)
	}
}

func TestRewriteWholeLogWithFreshValidChainIsCaughtBySignedRoot(t *testing.T) {
	t.Parallel()
	s := newSignedLog(t)
	s.write(t, 25)
	s.rewrite(t, func(i int, e *Event) bool {
		if i == 14 {
			e.Decision = DecisionDeny
		}
		return true
	})
	_, err := s.verify(t)
	// The first checkpoint after line 15 is on line 21 (after 20 lines).
	wantVerifyError(t, err, ErrTreeMismatch, 21)
	if !strings.Contains(err.Error(), "after the checkpoint at") {
		t.Errorf("error %v does not say after which checkpoint the wrong line is", err)
	}
}

func TestRewriteWithoutCheckpointsIsCaughtByKeyAndWitness(t *testing.T) {
	t.Parallel()
	s := newSignedLog(t)
	s.write(t, 25)
	s.rewrite(t, func(_ int, e *Event) bool { return e.Event != KindCheckpoint })
	files := []string{s.path}
	if _, err := VerifyWith(VerifyOptions{Key: s.pub}, files...); !errors.Is(err, ErrUnsigned) {
		t.Errorf("with the key alone: %v, want %v", err, ErrUnsigned)
	}
	if _, err := s.verify(t); err == nil {
		t.Error("with the witness: verified")
	}
}

func TestReplaceCheckpointWithOneSignedByAnotherKey(t *testing.T) {
	t.Parallel()
	s := newSignedLog(t)
	s.write(t, 25)
	other := newKey(t)
	s.rewrite(t, func(i int, e *Event) bool {
		if e.Event == KindCheckpoint && i == 10 {
			n, err := note.Open([]byte(e.Checkpoint), note.VerifierList(mustVerifier(t, s.key.Public)))
			if err != nil {
				t.Fatal(err)
			}
			msg, err := note.Sign(&note.Note{Text: n.Text}, other.Signer)
			if err != nil {
				t.Fatal(err)
			}
			e.Checkpoint = string(msg)
		}
		return true
	})
	_, err := s.verify(t)
	wantVerifyError(t, err, ErrBadCheckpoint, 11)
	// Re-signing every checkpoint of a rewritten log with another key
	// fails at the first one.
	if _, err := VerifyWith(VerifyOptions{Key: note.VerifierList(mustVerifier(t, other.Public))}, s.path); err == nil {
		t.Error("verified with the other key, whose checkpoint is one of four")
	}
}

func mustVerifier(t *testing.T, vkey string) note.Verifier {
	t.Helper()
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestDropLastLinesIsCaughtByTheWitness(t *testing.T) {
	t.Parallel()
	for _, k := range []int{1, 3, 20} {
		s := newSignedLog(t)
		s.write(t, 35)
		lines := readLines(t, s.path)
		writeLines(t, s.path, lines[:len(lines)-k])
		if _, err := VerifyWith(VerifyOptions{Key: s.pub}, s.path); err != nil {
			t.Fatalf("drop %d: without the witness the cut log verifies, as it must: %v", k, err)
		}
		_, err := s.verify(t)
		wantVerifyError(t, err, ErrCutTail, len(lines)-k+1)
		if k == 1 && !strings.Contains(err.Error(), "the witnessed checkpoint") {
			t.Errorf("drop the last checkpoint: %v, want it named missing", err)
		}
	}
}

func TestDropMiddleLineSwapTwoLinesInsertForgedLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		edit     func(lines []string) []string
		wantLine int
	}{
		{"a middle line dropped", func(l []string) []string { return append(l[:12:12], l[13:]...) }, 13},
		{"two lines swapped", func(l []string) []string { l[5], l[6] = l[6], l[5]; return l }, 6},
		{"a forged line inserted", func(l []string) []string {
			forged := strings.Replace(l[7], `"decision":"allow"`, `"decision":"deny"`, 1)
			return append(l[:8:8], append([]string{forged}, l[8:]...)...)
		}, 9},
		{"a checkpoint line moved", func(l []string) []string { l[10], l[9] = l[9], l[10]; return l }, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSignedLog(t)
			s.write(t, 25)
			writeLines(t, s.path, tt.edit(readLines(t, s.path)))
			_, err := s.verify(t)
			wantVerifyError(t, err, ErrChainBroken, tt.wantLine)
		})
	}
}

func TestTruncateMidLineThenRepairKeepsTreeAndCheckpoints(t *testing.T) {
	t.Parallel()
	s := newSignedLog(t)
	l := s.open(t, Config{Fsync: true})
	for i := range 25 {
		if err := l.Write(context.Background(), decisionEvent(i)); err != nil {
			t.Fatal(err)
		}
	}
	// A crash: the sink goes away without the Log's last checkpoint, and
	// half a line is left at the end.
	l.stopCheckpoints()
	l.sink.Close()
	l.cp.closeWitness()
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"time":"2026-01-01T00:00:00Z","event":"decis`)
	f.Close()
	if _, err := Open(Config{Path: s.path}, nil); !errors.Is(err, ErrIncompleteLine) {
		t.Fatalf("open: %v, want %v", err, ErrIncompleteLine)
	}
	if _, err := Repair(s.path, time.Now()); err != nil {
		t.Fatal(err)
	}
	s.write(t, 5)
	res, err := s.verify(t)
	if err != nil {
		t.Fatal(err)
	}
	if res.Unsigned != 0 || res.Checkpoints != 4 {
		t.Errorf("result %+v, want the repair and the new lines covered by the last of 4 checkpoints", res)
	}
}

func TestCheckpointsOfManyReplicasAreOneTreeEach(t *testing.T) {
	t.Parallel()
	k := newKey(t)
	pub, _ := ParseVerifierKey(k.Public)
	dir, witness := t.TempDir(), filepath.Join(t.TempDir(), "witness.jsonl")
	var chains []Chain
	for _, id := range []string{"a", "b", "c"} {
		p := filepath.Join(dir, id+".jsonl")
		l, err := Open(Config{Path: p, Witness: witness, CheckpointEvery: 7}, &Options{Signer: k.Signer, Replica: id})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			l.Write(context.Background(), decisionEvent(i))
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		chains = append(chains, Chain{Name: p, Files: []string{p}})
	}
	w, err := ReadWitnessFile(witness, pub)
	if err != nil || len(w) != 3 {
		t.Fatalf("witness: %v, %v; want a checkpoint of each of 3 replicas", w, err)
	}
	if _, err := VerifyChains(VerifyOptions{Key: pub, Witness: w}, chains...); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, chains[1].Files[0])
	writeLines(t, chains[1].Files[0], lines[:len(lines)-2])
	res, err := VerifyChains(VerifyOptions{Key: pub, Witness: w}, chains...)
	if !errors.Is(err, ErrCutTail) || res[0].Err != nil || res[1].Err == nil || res[2].Err != nil {
		t.Errorf("replica b's tail cut: %v, want only b to fail", err)
	}
}

func TestPartialLogIsHeldToItsFirstCheckpointOn(t *testing.T) {
	t.Parallel()
	s := newSignedLog(t)
	fs, err := OpenFile(s.path, FileOptions{MaxBytes: 4096, MaxBackups: 2})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := OpenFile(s.witness, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewWith(fs, Config{CheckpointEvery: 10}, &Options{Signer: s.key.Signer, Witness: ws})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 120 {
		l.Write(context.Background(), decisionEvent(i))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	w, err := ReadWitnessFile(s.witness, s.pub)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := Files(s.path)
	if _, err := VerifyWith(VerifyOptions{Key: s.pub, Witness: w}, files...); err == nil {
		t.Fatal("a pruned log verified as whole")
	}
	res, err := VerifyWith(VerifyOptions{Partial: true, Key: s.pub, Witness: w}, files...)
	if err != nil || res.Witnessed == 0 {
		t.Fatalf("partial: %+v, %v; want it verified against the witness", res, err)
	}
	// A line edited after the first checkpoint of the pruned log (line 4
	// of its middle file; each file starts with the event that rotated it
	// and the checkpoint after that rotation), the chain computed again
	// from there: the next checkpoint finds it.
	mid, last := files[len(files)-2], files[len(files)-1]
	a, b := readLines(t, mid), readLines(t, last)
	a[3] = strings.Replace(a[3], `"decision":"allow"`, `"decision":"deny"`, 1)
	all := append(a, b...)
	for j := 4; j < len(all); j++ {
		all[j] = rechain(t, all[j], all[j-1])
	}
	writeLines(t, mid, all[:len(a)])
	writeLines(t, last, all[len(a):])
	if _, err := VerifyWith(VerifyOptions{Partial: true, Key: s.pub, Witness: w}, files...); !errors.Is(err, ErrTreeMismatch) {
		t.Errorf("an edited, re-chained partial log: %v, want %v", err, ErrTreeMismatch)
	}
}

// rechain returns line with its prev_sha256 set to the hash of prev.
func rechain(t *testing.T, line, prev string) string {
	t.Helper()
	i := strings.LastIndex(line, `"prev_sha256":"`)
	if i < 0 {
		t.Fatalf("no prev_sha256 in %q", line)
	}
	return line[:i] + `"prev_sha256":"` + hashLine([]byte(prev)) + `"}`
}
