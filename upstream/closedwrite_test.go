package upstream

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
)

// syncBuffer is a bytes.Buffer safe for the transport's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestUpstreamRequestAnsweredAfterCloseLogsNoError(t *testing.T) {
	t.Parallel()
	// The session's pipes: the upstream's stdout, read by the transport,
	// and its stdin, written by it.
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { outR.Close(); outW.Close(); inR.Close() })
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError}))
	tr := transport.NewIO(outR, inW, nil)
	transport.WithCommandLogger(slog.New(closedWriteHandler{logger.Handler()}))(tr)
	if err := tr.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	// mcpwarden closes the session (its stdin) just as the upstream asks
	// something: `mcpwarden tools` printed "Error writing response …
	// file already closed" once this way.
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := outW.WriteString(`{"jsonrpc":"2.0","id":7,"method":"roots/list"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if got := logs.String(); strings.Contains(got, "Error writing response") {
		t.Errorf("a response the closed session could not write was logged as an error:\n%s", got)
	}
}

func TestClosedWriteHandlerKeepsOtherErrors(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	logger := slog.New(closedWriteHandler{slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError})})
	logger.Error("Error writing response", "err", os.ErrClosed)
	logger.Error("Error writing response", "err", os.NewSyscallError("write", syscall.EPIPE))
	logger.Error("something else", "err", os.ErrClosed)
	got := logs.String()
	if strings.Count(got, "Error writing response") != 1 || !strings.Contains(got, "broken pipe") || !strings.Contains(got, "something else") {
		t.Errorf("got logs:\n%s\nwant the broken pipe and the other error, not the closed pipe", got)
	}
}
