package upstream

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
)

// logFile is a text log in a file of the test's (writes to a file are
// safe from the transport's goroutines) and a function that reads it.
func logFile(t *testing.T) (*slog.Logger, func() string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelError})), func() string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
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
	logger, logs := logFile(t)
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
	if got := logs(); strings.Contains(got, "Error writing response") {
		t.Errorf("a response the closed session could not write was logged as an error:\n%s", got)
	}
}

func TestClosedWriteHandlerKeepsOtherErrors(t *testing.T) {
	t.Parallel()
	plain, logs := logFile(t)
	logger := slog.New(closedWriteHandler{plain.Handler()})
	logger.Error("Error writing response", "err", os.ErrClosed)
	logger.Error("Error writing response", "err", os.NewSyscallError("write", syscall.EPIPE))
	logger.Error("something else", "err", os.ErrClosed)
	got := logs()
	if strings.Count(got, "Error writing response") != 1 || !strings.Contains(got, "broken pipe") || !strings.Contains(got, "something else") {
		t.Errorf("got logs:\n%s\nwant the broken pipe and the other error, not the closed pipe", got)
	}
}
