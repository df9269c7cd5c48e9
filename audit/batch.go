package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"sync"
)

// A lineBatcher is a Sink that can store several lines with one write (and,
// for a file with Fsync, one sync). WriteLines stores lines, one or more
// whole lines each ending in '\n', in order, and returns how many bytes of
// them from the start it stored, always a whole number of lines: on error
// the lines before that point are stored (durably, if the sink promises
// that) and the rest are not. It ignores ctx, since the lines of a batch
// belong to several callers.
//
// syncs reports whether each write is synced: group commit is used only
// then. Measured (BenchmarkLogWriteParallel, 16 writers), it makes writers
// syncing a file about 4× faster, and writers that do not sync about 1.3×
// slower: their writes are quick, so batches rarely form, and handing the
// sink over costs more than the writes it saves.
type lineBatcher interface {
	WriteLines(ctx context.Context, lines []byte) (int, error)
	syncs() bool
}

var _ lineBatcher = (*FileSink)(nil)

// A batch is the lines queued while another Write was writing. The Write
// that queued the first of them writes them all at once (group commit) when
// the writer before it hands over, and each of their Writes returns once
// the batch is stored. Its slices are guarded by the Log's mutex until
// done is closed.
type batch struct {
	bufs  []*[]byte // encoded events, completed by writeBatch
	kinds []Kind
	errs  []error       // each event's outcome, set before done is closed
	lead  chan struct{} // closed when the batch's first Write is to write it
	done  chan struct{} // closed when the batch is written
}

// batcher is the group-commit state of a Log whose sink is a lineBatcher.
// Its fields are guarded by the Log's mutex, except lines, ends and sums,
// which only the Write that is writing uses. While queue is not nil,
// writing is true: a writer hands the sink to the queue's first Write, so
// only one Write wakes for each batch.
type batcher struct {
	sink    lineBatcher
	cond    sync.Cond // L is the Log's mutex; broadcast when writing ends
	queue   *batch    // lines waiting for the sink; nil when none
	writing bool      // a Write is writing a batch, outside the mutex
	lines   []byte    // the batch being written, its lines completed
	ends    []int     // the end of each line in lines
	sums    [][sha256.Size]byte
}

// writeBatched writes the event in buf, or queues it and returns once it
// is stored or has failed: a Write that finds the sink free writes its own
// line, and the first Write queued behind a writer writes every line
// queued so far in one WriteLines when that writer hands over. l.mu must
// be held; it is held again on return.
func (l *Log) writeBatched(ctx context.Context, buf *[]byte, k Kind) error {
	bt := l.batch
	if !bt.writing {
		// Alone: no batch to build.
		var errs [1]error
		bt.writing = true
		l.writeBatch(ctx, []*[]byte{buf}, []Kind{k}, errs[:])
		l.handOver()
		return errs[0]
	}
	b := bt.queue
	first := b == nil
	if first {
		b = &batch{lead: make(chan struct{}), done: make(chan struct{})}
		bt.queue = b
	}
	i := len(b.bufs)
	b.bufs = append(b.bufs, buf)
	b.kinds = append(b.kinds, k)
	b.errs = append(b.errs, nil)
	l.mu.Unlock()
	if !first {
		<-b.done
		l.mu.Lock()
		return b.errs[i]
	}
	<-b.lead
	l.mu.Lock()
	bt.queue = nil
	l.writeBatch(ctx, b.bufs, b.kinds, b.errs)
	close(b.done)
	l.handOver()
	return b.errs[i]
}

// handOver ends a Write's turn at the sink: the first Write of the queue,
// if any, takes it; otherwise the sink is free, and Close may go on.
// l.mu must be held.
func (l *Log) handOver() {
	bt := l.batch
	if bt.queue != nil {
		close(bt.queue.lead)
		return
	}
	bt.writing = false
	bt.cond.Broadcast()
}

// writeBatch writes the events in bufs, of kinds, and sets each one's
// outcome in errs: first the KindLost event for the events lost so far, if
// any, then the events, each chained to the line before, in one WriteLines
// outside the mutex. Lines stored are chained; the others are counted as
// lost, with the sink's error. l.mu must be held, and is again on return.
func (l *Log) writeBatch(ctx context.Context, bufs []*[]byte, kinds []Kind, errs []error) {
	if l.closed {
		for i := range errs {
			errs[i] = ErrClosed
		}
		return
	}
	withLost := l.lost.count > 0
	if withLost {
		e := l.lost.event(l.now())
		e.Error = l.red.String(e.Error)
		lb, err := l.encode(e)
		if err != nil {
			l.failBatch(kinds, errs, 0, err)
			return
		}
		defer l.putBuf(lb)
		bufs = append([]*[]byte{lb}, bufs...)
	}
	bt := l.batch
	bt.lines, bt.ends, bt.sums = bt.lines[:0], bt.ends[:0], bt.sums[:0]
	prev := l.prev
	l.mu.Unlock()
	for i, buf := range bufs {
		start := len(bt.lines)
		bt.lines = append(append(bt.lines, *buf...), '"')
		if i == 0 {
			bt.lines = append(bt.lines, prev...)
		} else {
			bt.lines = hex.AppendEncode(bt.lines, bt.sums[i-1][:])
		}
		bt.lines = append(bt.lines, `"}`+"\n"...)
		bt.ends = append(bt.ends, len(bt.lines))
		bt.sums = append(bt.sums, sha256.Sum256(bt.lines[start:len(bt.lines)-1]))
	}
	n, err := bt.sink.WriteLines(ctx, bt.lines)
	if err == nil && n != len(bt.lines) {
		err = io.ErrShortWrite
	}
	if cap(bt.lines) > 16*maxPooledBuf {
		bt.lines = nil
	}
	l.mu.Lock()
	stored := 0
	for stored < len(bt.ends) && bt.ends[stored] <= n {
		stored++
	}
	if stored > 0 {
		l.prev = hex.AppendEncode(l.prev[:0], bt.sums[stored-1][:])
	}
	for _, sum := range bt.sums[:stored] {
		l.stored(sum)
	}
	if l.due() {
		_ = l.checkpoint(context.WithoutCancel(ctx)) // over lines the sink has stored (and synced); a failure is counted as lost
	}
	if withLost {
		if stored == 0 {
			l.failBatch(kinds, errs, 0, err)
			return
		}
		l.lost = lostEvents{}
		stored--
	}
	l.failBatch(kinds, errs, stored, err)
}

// failBatch counts the events from the from'th on, of kinds, as lost
// because of err and sets their outcome in errs to err; the events before
// it were stored.
func (l *Log) failBatch(kinds []Kind, errs []error, from int, err error) {
	for i := from; i < len(kinds); i++ {
		l.lost.add(kinds[i], l.now(), err)
		errs[i] = err
	}
}
