package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// A RepairResult says what Repair did. Torn is the file whose torn last
// line was moved aside, "" if the log ended with a whole line; TornBytes is
// the length of that partial line and MovedTo the file now holding it.
type RepairResult struct {
	Torn      string
	TornBytes int64
	MovedTo   string
}

// Repair makes the log at path writable again after a crash cut its last
// write short (ErrIncompleteLine). It takes the log's lock, so it refuses
// while mcpwarden writes the log (ErrLocked); moves the partial last line of
// the newest non-empty file (the one OpenFile continues the chain from) into
// <file>.torn-<UTC time>, mode 0600, so nothing is destroyed; cuts the file
// back to its last whole line; and appends a KindLost event naming the moved
// bytes, chained to that line, so the repair itself is on record. A log that
// ends with a whole line is left as it is. now is the time for the file name
// and the event. The caller verifies the log afterwards.
func Repair(path string, now time.Time) (RepairResult, error) {
	var res RepairResult
	lock, err := takeLock(path)
	if err != nil {
		return res, err
	}
	files, err := Files(path)
	if err != nil {
		lock.Close()
		return res, err
	}
	for i := len(files) - 1; i >= 0; i-- {
		whole, size, err := wholeLines(files[i])
		if err != nil {
			lock.Close()
			return res, err
		}
		if size == 0 {
			continue
		}
		if whole < size {
			res, err = moveTornTail(files[i], whole, size, now)
			if err != nil {
				lock.Close()
				return res, err
			}
		}
		break
	}
	s, err := openLocked(path, FileOptions{Fsync: true}, lock)
	if err != nil {
		return res, err
	}
	if res.Torn == "" {
		return res, s.Close()
	}
	l := New(s, Config{})
	l.now = func() time.Time { return now }
	werr := l.Write(context.Background(), Event{
		Event:  KindLost,
		Lost:   1,
		Error:  "incomplete last line: a write was cut short",
		Detail: fmt.Sprintf("the torn last line of %s (%d bytes) was moved to %s by mcpwarden audit repair", filepath.Base(res.Torn), res.TornBytes, filepath.Base(res.MovedTo)),
	})
	if err := errors.Join(werr, l.Close()); err != nil {
		return res, fmt.Errorf("recording the repair in the audit log: %w", err)
	}
	return res, nil
}

// moveTornTail copies the bytes of path from whole to size into a new file
// next to it and then cuts path back to whole bytes, syncing both first.
func moveTornTail(path string, whole, size int64, now time.Time) (RepairResult, error) {
	res := RepairResult{Torn: path, TornBytes: size - whole, MovedTo: path + ".torn-" + now.UTC().Format("20060102T150405Z")}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return res, fmt.Errorf("repairing audit log: %w", err)
	}
	defer f.Close()
	tail := make([]byte, size-whole)
	if _, err := f.ReadAt(tail, whole); err != nil {
		return res, fmt.Errorf("reading the torn line of %s: %w", path, err)
	}
	out, err := os.OpenFile(res.MovedTo, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return res, fmt.Errorf("keeping the torn line of %s: %w", path, err)
	}
	_, err = out.Write(tail)
	err = errors.Join(err, out.Sync(), out.Close())
	if err != nil {
		return res, fmt.Errorf("keeping the torn line of %s in %s: %w", path, res.MovedTo, err)
	}
	if err := errors.Join(f.Truncate(whole), f.Sync(), syncDir(filepath.Dir(path))); err != nil {
		return res, fmt.Errorf("cutting the torn line off %s (it is kept in %s): %w", path, res.MovedTo, err)
	}
	return res, nil
}

// wholeLines returns how many bytes of the file at path are whole lines
// (up to and including its last newline) and its size. It reads backwards
// from the end. A missing file has neither.
func wholeLines(path string) (whole, size int64, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("reading audit log: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, fmt.Errorf("reading audit log: %w", err)
	}
	size = fi.Size()
	buf := make([]byte, 8192)
	for end := size; end > 0; {
		n := min(int64(len(buf)), end)
		start := end - n
		if _, err := f.ReadAt(buf[:n], start); err != nil && err != io.EOF {
			return 0, 0, fmt.Errorf("reading audit log: %w", err)
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return start + int64(i) + 1, size, nil
		}
		end = start
	}
	return 0, size, nil
}
