package audit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// A Sink stores audit lines. Each call to Write passes one complete JSON
// event terminated by a single '\n'; the sink must store it whole or return an
// error, must not keep line after returning, and must have stored it (durably,
// if it promises that) when Write returns nil. Log serialises its calls, but a
// Sink used on its own must be safe for concurrent use too. Close releases the
// sink's resources and is idempotent; Write after Close returns ErrClosed.
//
// A Sink that can tell the hash of the last line it already holds (a reopened
// file) implements `LastSHA256() string`; New continues the chain from it.
type Sink interface {
	Write(ctx context.Context, line []byte) error
	Close() error
}

// Interface guards.
var (
	_ Sink = (*FileSink)(nil)
	_ Sink = (*WriterSink)(nil)
	_ Sink = DiscardSink{}
	_ Sink = (*HTTPSink)(nil)
)

// ErrClosed is returned by writes to a closed Log or Sink.
var ErrClosed = errors.New("audit log closed")

// A WriterSink writes lines to an io.Writer, such as os.Stderr. Each line is
// passed to the writer in one Write call under the sink's mutex. Close does not
// close the writer.
type WriterSink struct {
	mu     sync.Mutex
	w      io.Writer
	closed bool
}

// NewWriterSink returns a WriterSink writing to w.
func NewWriterSink(w io.Writer) *WriterSink { return &WriterSink{w: w} }

// Write writes line to the writer; a short write is an error.
func (s *WriterSink) Write(_ context.Context, line []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	n, err := s.w.Write(line)
	if err == nil && n != len(line) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return fmt.Errorf("writing audit line: %w", err)
	}
	return nil
}

// Close marks the sink closed. It is idempotent.
func (s *WriterSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

// DiscardSink drops every line: it is the "none" sink. The Log still builds
// each line and its chain, so redaction and encoding errors show up anyway.
type DiscardSink struct{}

// Write does nothing.
func (DiscardSink) Write(context.Context, []byte) error { return nil }

// Close does nothing.
func (DiscardSink) Close() error { return nil }
