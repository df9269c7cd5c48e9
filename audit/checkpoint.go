package audit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// Defaults of the checkpoint schedule.
const (
	DefaultCheckpointEvery    = 1000
	DefaultCheckpointInterval = time.Minute
)

// checkpoints is the signing state of a Log: the tree of the lines stored
// so far and when the next checkpoint is due. It is guarded by the Log's
// mutex.
type checkpoints struct {
	signer   note.Signer
	witness  Sink // nil: none
	origin   string
	every    int64
	tree     tree
	signed   int64  // tree size of the last checkpoint written
	quiet    int64  // tree size just after the last checkpoint line: nothing new to sign while the tree is no larger
	rotated  int64  // the sink's rotation count when last seen
	witnessE string // the first witness failure since the last checkpoint
	timeDue  bool   // the interval passed while a batch was being written: its writer writes the checkpoint
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

// rotationCounter is a sink that counts its rotations (FileSink).
type rotationCounter interface{ Rotations() int64 }

// startCheckpoints turns signing on: the tree continues from the log's
// lines (a file sink's, read back), and a goroutine writes a checkpoint
// every interval when lines were stored since the last one.
func (l *Log) startCheckpoints(o *Options, every int, interval time.Duration) error {
	cp := &checkpoints{signer: o.Signer, witness: o.Witness, origin: origin(l.replica), every: int64(every)}
	if cp.every <= 0 {
		cp.every = DefaultCheckpointEvery
	}
	if interval <= 0 {
		interval = DefaultCheckpointInterval
	}
	if fs, ok := l.sink.(*FileSink); ok {
		t, err := resumeTree(fs.path)
		if err != nil {
			return err
		}
		cp.tree, cp.signed, cp.quiet, cp.rotated = t.tree, t.signed, t.quiet, fs.Rotations()
	}
	cp.stop, cp.done = make(chan struct{}), make(chan struct{})
	l.cp = cp
	go l.tick(interval)
	return nil
}

// tick writes a checkpoint every interval until Close. While a batch is
// being written (group commit), it leaves the checkpoint to the Write at
// the sink, which writes it as soon as its lines are stored: under steady
// load the sink passes from one batch to the next without ever being
// free, and waiting for it would put the checkpoint off until the load
// stops.
func (l *Log) tick(interval time.Duration) {
	defer close(l.cp.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-l.cp.stop:
			return
		case <-t.C:
		}
		l.mu.Lock()
		switch {
		case l.closed: // Close wrote the last one
		case l.batch != nil && l.batch.writing:
			l.cp.timeDue = true
		default:
			_ = l.checkpoint(context.Background()) // a failure is counted as lost and retried
		}
		l.mu.Unlock()
	}
}

// stored adds the line whose SHA-256 is sum to the tree, once the sink has
// stored it. l.mu must be held.
func (l *Log) stored(sum [32]byte) {
	if l.cp != nil {
		l.cp.tree.add(sum)
	}
}

// due reports whether a checkpoint must be written now: every lines were
// stored since the last one, the interval passed while a batch was being
// written, or the sink rotated. l.mu must be held.
func (l *Log) due() bool {
	cp := l.cp
	if cp == nil || cp.tree.n <= cp.quiet {
		return false
	}
	if cp.tree.n-cp.signed >= cp.every || cp.timeDue {
		return true
	}
	rc, ok := l.sink.(rotationCounter)
	return ok && rc.Rotations() != cp.rotated
}

// checkpoint signs the tree of the lines stored so far, writes the
// checkpoint as the log's next line and sends that line to the witness.
// Every line it covers has been stored (and synced, with fsync) by the
// sink. A log with nothing new since its last checkpoint line gets none:
// a checkpoint is not signed over the one before it alone. A
// witness failure does not fail the checkpoint: it is recorded in the
// next checkpoint's error. l.mu must be held, and no batch be writing.
func (l *Log) checkpoint(ctx context.Context) error {
	cp := l.cp
	if cp == nil || cp.tree.n <= cp.quiet {
		return nil
	}
	if err := l.writeLost(ctx); err != nil {
		return err
	}
	c := Checkpoint{Origin: cp.origin, Size: cp.tree.n, Root: cp.tree.root()}
	msg, err := signCheckpoint(c, cp.signer)
	if err != nil {
		return err
	}
	e := Event{Event: KindCheckpoint, Checkpoint: string(msg), Subtrees: cp.tree.edgeStrings(), Error: cp.witnessE}
	buf, err := l.encode(e)
	if err != nil {
		return err
	}
	defer l.putBuf(buf)
	if err := l.writeLine(ctx, buf); err != nil {
		l.lost.add(KindCheckpoint, l.now(), err)
		return err
	}
	cp.signed, cp.quiet, cp.witnessE, cp.timeDue = c.Size, cp.tree.n, "", false
	if rc, ok := l.sink.(rotationCounter); ok {
		cp.rotated = rc.Rotations()
	}
	if cp.witness != nil {
		if err := cp.witness.Write(ctx, *buf); err != nil {
			cp.witnessE = fmt.Sprintf("the witness did not take the checkpoint of %d lines: %v", c.Size, err)
		}
	}
	return nil
}

// Checkpoint writes a signed checkpoint of the lines stored so far now, if
// the Log signs checkpoints and lines were stored since the last one.
func (l *Log) Checkpoint(ctx context.Context) error {
	if l == nil {
		return ErrNoLog
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.batch != nil && l.batch.writing {
		l.batch.cond.Wait()
	}
	if l.closed {
		return ErrClosed
	}
	return l.checkpoint(ctx)
}

// stopCheckpoints ends the ticking goroutine; l.mu must not be held.
func (l *Log) stopCheckpoints() {
	if l.cp == nil {
		return
	}
	l.cp.stopOnce.Do(func() { close(l.cp.stop) })
	<-l.cp.done
}

// closeWitness closes the witness sink, if any.
func (cp *checkpoints) closeWitness() error {
	if cp == nil || cp.witness == nil {
		return nil
	}
	if err := cp.witness.Close(); err != nil && !errors.Is(err, ErrClosed) {
		return fmt.Errorf("closing the audit witness: %w", err)
	}
	return nil
}
