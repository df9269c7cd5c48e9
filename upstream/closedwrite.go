package upstream

import (
	"context"
	"errors"
	"log/slog"
	"os"
)

// A closedWriteHandler is the log handler of a stdio session's transport.
// It passes every record on, except that a failure to write a response
// to the upstream's stdin because the session closed it is logged at debug
// level, not as an error: an upstream that sends a request (roots/list
// after initialize, a ping) just as mcpwarden stops the session — a short
// command such as `mcpwarden tools`, a restart, a reload — gets its answer
// from a goroutine of mcp-go's transport that may run after the pipe is
// closed, and nothing is lost by not answering a session that is over.
// Only the session closes the pipe, so os.ErrClosed says it did; a child
// that went away gives EPIPE instead, which stays an error.
type closedWriteHandler struct{ slog.Handler }

func (h closedWriteHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError && r.Message == "Error writing response" && recordErrIs(r, os.ErrClosed) {
		r.Level = slog.LevelDebug
		if !h.Enabled(ctx, r.Level) {
			return nil
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h closedWriteHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return closedWriteHandler{h.Handler.WithAttrs(as)}
}

func (h closedWriteHandler) WithGroup(name string) slog.Handler {
	return closedWriteHandler{h.Handler.WithGroup(name)}
}

// recordErrIs reports whether an "err" attribute of r is target.
func recordErrIs(r slog.Record, target error) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && a.Key == "err" && errors.Is(err, target) {
			found = true
		}
		return !found
	})
	return found
}
