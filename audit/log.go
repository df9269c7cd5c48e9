package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// Options are the parts of a Log that are not configuration. The zero value
// (or nil) uses os.Stderr, time.Now and a default HTTP client.
type Options struct {
	Stderr     io.Writer        // the stderr sink's writer
	Now        func() time.Time // the clock for Event.Time and ids
	HTTPClient *http.Client     // the http sink's client
	// Replica is this mcpwarden's replica id (config replica), written in
	// every event as "replica" so that each replica's chain names it;
	// "" writes none.
	Replica string
	// Signer, when set, signs checkpoints of the log's Merkle tree
	// (Config.CheckpointEvery, CheckpointInterval, at rotation and at
	// Close); nil writes none. Witness, when set, gets a copy of every
	// checkpoint line, and is closed by Close; Open builds it from
	// Config.Witness when nil.
	Signer  note.Signer
	Witness Sink
}

// ErrNoLog is returned by Write on a nil *Log.
var ErrNoLog = errors.New("no audit log")

// A Log writes audit events to a Sink as a hash-chained JSON Lines stream.
// Write redacts, encodes and hands one line to the sink under a mutex, and
// returns only once the sink has stored it, so lines are never interleaved,
// chain order is sink order, and nothing is lost at shutdown. A Log is safe
// for concurrent use. With a file sink that syncs every line (audit.fsync),
// the lines of Writes that arrive while another Write is writing are stored
// together by the next one, in one write and one sync (group commit); each
// of those Writes still returns only once its own line is synced.
//
// An event the sink fails to store is counted, with the first failure; the
// next Write (or Close) first writes a KindLost event saying how many events
// of which kinds were lost, when and why, so a gap in the log is never
// silent. Until that event is stored, no other event is.
//
// A nil *Log fails closed: Write returns ErrNoLog, Required reports true and
// Redactor returns the default Redactor; Close does nothing. The proxy should
// always build a Log (sink "none" when audit is off) and never rely on nil.
type Log struct {
	sink     Sink
	red      *Redactor
	required bool
	now      func() time.Time
	replica  string // Event.Replica of every line
	err      error  // a configuration error, returned by every Write

	bufs sync.Pool // of *[]byte: line buffers, reused once the sink has returned

	mu     sync.Mutex
	prev   []byte     // hex SHA-256 of the last line stored; empty before the first
	lost   lostEvents // events not written since the last line that was
	closed bool
	batch  *batcher     // group commit, when the sink is a lineBatcher; nil otherwise
	cp     *checkpoints // signed checkpoints, with Options.Signer; nil otherwise
}

// Open validates cfg and returns a Log writing to the sink it selects. A file
// log that already exists is appended to and its chain continued.
func Open(cfg Config, opts *Options) (*Log, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts == nil {
		opts = &Options{}
	}
	var s Sink
	switch cfg.SinkName() {
	case SinkFile:
		fs, err := OpenFile(cfg.Path, FileOptions{
			Fsync:      cfg.Fsync,
			MaxBytes:   int64(cfg.MaxSizeMB) << 20,
			MaxBackups: cfg.MaxBackups,
		})
		if err != nil {
			return nil, err
		}
		s = fs
	case SinkStderr:
		w := opts.Stderr
		if w == nil {
			w = os.Stderr
		}
		s = NewWriterSink(w)
	case SinkHTTP:
		s = NewHTTPSink(cfg.URL, opts.HTTPClient)
	default:
		s = DiscardSink{}
	}
	if opts.Signer != nil && opts.Witness == nil && cfg.Witness != "" {
		o := *opts
		w, err := openWitness(cfg, &o)
		if err != nil {
			s.Close()
			return nil, err
		}
		o.Witness = w
		opts = &o
	}
	l, err := NewWith(s, cfg, opts)
	if err != nil {
		s.Close()
		if opts.Witness != nil {
			opts.Witness.Close()
		}
		return nil, err
	}
	return l, nil
}

// NewWith is New with opts: its clock, replica id and, with a Signer,
// signed checkpoints, continuing the tree of a file sink's log.
func NewWith(s Sink, cfg Config, opts *Options) (*Log, error) {
	l := New(s, cfg)
	if opts == nil {
		return l, nil
	}
	if opts.Now != nil {
		l.now = opts.Now
	}
	l.replica = opts.Replica
	if opts.Signer != nil && l.err == nil {
		if err := l.startCheckpoints(opts, cfg.CheckpointEvery, cfg.CheckpointInterval); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// New returns a Log writing to s with the redaction and Required setting of
// cfg; the sink fields of cfg are ignored. If s has a LastSHA256() string
// method, the chain continues from it. An invalid redaction setting in cfg
// does not panic: every Write returns the error instead.
func New(s Sink, cfg Config) *Log {
	l := &Log{sink: s, required: cfg.Required, now: time.Now}
	l.red, l.err = NewRedactor(cfg)
	if s == nil {
		l.err = errors.New("audit log without a sink")
	}
	if c, ok := s.(interface{ LastSHA256() string }); ok {
		l.prev = []byte(c.LastSHA256())
	}
	if lb, ok := s.(lineBatcher); ok && lb.syncs() {
		l.batch = &batcher{sink: lb}
		l.batch.cond.L = &l.mu
	}
	return l
}

// Required reports whether a failed Write must deny the call it records
// (audit.required). It is true for a nil Log.
func (l *Log) Required() bool { return l == nil || l.required }

// Redactor returns the Redactor the Log applies to events, for redacting
// arguments shown elsewhere (elicitation messages, logs).
func (l *Log) Redactor() *Redactor {
	if l == nil {
		return defaultRedactor
	}
	return l.red.orDefault()
}

// Write records e: it fills in Time (UTC; now if zero) and ID (if empty),
// redacts a copy of e's arguments and free text, sets PrevSHA256 to the hash
// of the previous line, encodes the event as one line and writes it to the
// sink. It returns after the sink has stored the line; on error the line is
// not part of the chain. e itself is not modified. ctx is passed to the sink.
func (l *Log) Write(ctx context.Context, e Event) error {
	if l == nil {
		return ErrNoLog
	}
	if l.err != nil {
		return fmt.Errorf("audit: %w", l.err)
	}
	if !e.Event.valid() {
		return fmt.Errorf("audit: invalid event kind %d", uint8(e.Event))
	}
	r := l.red
	e.Arguments = r.Arguments(e.Arguments)
	e.ResultPreview = r.String(e.ResultPreview)
	e.Error = r.String(e.Error)
	e.Reason = r.String(e.Reason)
	e.Detail = r.String(e.Detail)
	if e.Client != nil {
		e.Client = &Client{Name: r.String(e.Client.Name), Version: r.String(e.Client.Version)}
	}

	buf, err := l.encode(e)
	if buf != nil {
		defer l.putBuf(buf)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if err == nil && l.batch != nil {
		return l.writeBatched(ctx, buf, e.Event)
	}
	if err == nil {
		err = l.writeLost(ctx)
	}
	if err == nil {
		err = l.writeLine(ctx, buf)
	}
	if err != nil {
		l.lost.add(e.Event, l.now(), err)
		return err
	}
	if l.due() {
		_ = l.checkpoint(context.WithoutCancel(ctx)) // a failure is counted as lost; the next Write retries
	}
	return nil
}

// encode fills in e's time and id and encodes it into a buffer from l.bufs
// as a line that ends with the prev_sha256 key (the last field), for
// writeLine to complete: encoding happens outside the lock, so concurrent
// writers wait for each other's writes only. The caller gives the buffer
// back with putBuf once the sink has returned.
func (l *Log) encode(e Event) (*[]byte, error) {
	if e.Time.IsZero() {
		e.Time = l.now()
	}
	e.Time = e.Time.UTC()
	if e.ID == "" {
		e.ID = NewID(e.Time)
	}
	e.Replica = l.replica
	buf, _ := l.bufs.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	b, err := appendEvent((*buf)[:0], &e)
	*buf = b
	if err != nil {
		l.putBuf(buf)
		return nil, fmt.Errorf("encoding audit event: %w", err)
	}
	return buf, nil
}

// maxPooledBuf is the largest line buffer kept for reuse: a rare huge line
// (arguments near the redaction limits times many keys) is not held on to.
const maxPooledBuf = 64 << 10

// putBuf gives buf back to l.bufs for the next encode.
func (l *Log) putBuf(buf *[]byte) {
	if cap(*buf) <= maxPooledBuf {
		l.bufs.Put(buf)
	}
}

// writeLine completes the line in buf with the previous line's hash, writes
// it to the sink and chains it, hashing the bytes it wrote. l.mu must be
// held.
func (l *Log) writeLine(ctx context.Context, buf *[]byte) error {
	line := append(append(append(*buf, '"'), l.prev...), `"}`+"\n"...)
	*buf = line
	if err := l.sink.Write(ctx, line); err != nil {
		return err
	}
	sum := sha256.Sum256(line[:len(line)-1])
	l.prev = hex.AppendEncode(l.prev[:0], sum[:])
	l.stored(sum)
	return nil
}

// Close writes the KindLost event for events lost since the last stored
// line, if any, and closes the sink. It is idempotent; Write after Close
// returns ErrClosed.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	l.stopCheckpoints()
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.batch != nil && l.batch.writing {
		l.batch.cond.Wait()
	}
	if l.closed {
		return nil
	}
	if l.sink == nil {
		l.closed = true
		return nil
	}
	n := l.lost.count
	err := l.writeLost(context.Background())
	if err != nil {
		err = fmt.Errorf("recording %d lost audit events at close: %w", n, err)
	} else if err = l.checkpoint(context.Background()); err != nil {
		err = fmt.Errorf("signing the last audit checkpoint at close: %w", err)
	}
	l.closed = true
	return errors.Join(err, l.sink.Close(), l.cp.closeWitness())
}
