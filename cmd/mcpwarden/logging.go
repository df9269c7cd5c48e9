package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/lmittmann/tint"
)

// newLogger builds the human log on w (always stderr in practice: stdout is
// the protocol in stdio mode). replace redacts secrets before anything is
// printed.
func newLogger(w io.Writer, level, format string, replace func([]string, slog.Attr) slog.Attr) (*slog.Logger, error) {
	var lv slog.Level
	if level == "" {
		level = "info"
	}
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: use debug, info, warn or error", level)
	}
	switch format {
	case "", "text":
		return slog.New(tint.NewHandler(w, &tint.Options{
			Level:       lv,
			ReplaceAttr: replace,
			TimeFormat:  "15:04:05.000",
			NoColor:     !isTerminal(w),
		})), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lv, ReplaceAttr: replace})), nil
	default:
		return nil, fmt.Errorf("log format %q: use text or json", format)
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
