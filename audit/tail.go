package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// A Filter selects events for display. Empty fields match everything; set
// fields must all match. Since keeps events at or after that time.
type Filter struct {
	Server   string
	Decision string
	Outcome  Outcome
	Event    Kind
	Session  string
	Since    time.Time
}

// Match reports whether e passes f. A result event has no decision of its
// own, so a Decision filter keeps only decision events.
func (f Filter) Match(e Event) bool {
	switch {
	case f.Server != "" && e.Server != f.Server,
		f.Decision != "" && e.Decision != f.Decision,
		f.Outcome != OutcomeNone && e.Outcome != f.Outcome,
		f.Event != 0 && e.Event != f.Event,
		f.Session != "" && e.Session != f.Session,
		!f.Since.IsZero() && e.Time.Before(f.Since):
		return false
	}
	return true
}

// ParseSince parses a --since value relative to now: a duration ("90m",
// "1h", "2h30m", and "7d" for days), an RFC 3339 time, or a date
// (2006-01-02, midnight UTC).
func ParseSince(s string, now time.Time) (time.Time, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(d); err == nil && n >= 0 {
			return now.Add(-time.Duration(n) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("--since %q: negative duration", s)
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--since %q: want a duration (1h, 30m, 7d), an RFC 3339 time or a date", s)
}

// ReadEvents calls fn for each line of r with its number (from 1), its bytes
// (without the newline; valid only during the call) and the event decoded
// from it, or with a decoding error (fn decides whether to go
// on). A last line without its newline is passed with an error wrapping
// ErrIncompleteLine: it may still be being written. ReadEvents returns the
// number of bytes up to the end of the last complete line (where Follow can
// take over), and stops at the first error fn returns.
func ReadEvents(r io.Reader, fn func(n int, line []byte, e Event, err error) error) (int64, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var off int64
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return off, err
		}
		if len(line) == 0 {
			return off, nil
		}
		var e Event
		var derr error
		if err == io.EOF {
			derr = fmt.Errorf("line %d: %w", n, ErrIncompleteLine)
		} else if derr = json.Unmarshal(line, &e); derr != nil {
			derr = fmt.Errorf("line %d: %w", n, derr)
		}
		if ferr := fn(n, bytes.TrimSuffix(line, []byte{'\n'}), e, derr); ferr != nil {
			return off, ferr
		}
		if err == io.EOF {
			return off, nil
		}
		off += int64(len(line))
	}
}

// Format renders e as one human-readable line: time (UTC, milliseconds),
// event kind, then what matters for the kind: decision, tool, rule and
// granted_by for a decision; tool, duration, outcome and size for a result;
// server and detail for upstream and tools_changed events; and session,
// client, arguments, error and replica where present.
func Format(e Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %-13s", e.Time.UTC().Format("2006-01-02T15:04:05.000Z"), e.Event)
	field := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, " %s=%s", k, quoteIfNeeded(v))
		}
	}
	switch e.Event {
	case KindDecision:
		fmt.Fprintf(&b, " %-5s %s", decisionLabel(e), e.Tool)
		field("rule", e.Rule)
		field("by", e.GrantedBy.String())
		field("outcome", e.Outcome.String())
	case KindResult:
		b.WriteString(" " + e.Tool)
		if e.DurationMS != nil {
			fmt.Fprintf(&b, " %dms", *e.DurationMS)
		}
		if e.IsError != nil {
			if *e.IsError {
				b.WriteString(" ERROR")
			} else {
				b.WriteString(" ok")
			}
		}
		if e.ResultBytes != nil {
			fmt.Fprintf(&b, " %dB", *e.ResultBytes)
		}
		field("by", e.GrantedBy.String())
		field("outcome", e.Outcome.String())
		field("decision_id", e.DecisionID)
	case KindCheckpoint:
		if c, err := OpenCheckpoint([]byte(e.Checkpoint), nil); err == nil {
			fmt.Fprintf(&b, " %d lines of %s signed", c.Size, c.Origin)
		}
		field("error", e.Error)
	case KindPolicyChanged:
		fmt.Fprintf(&b, " changed=%d widened=%d", e.Changed, e.Widened)
		field("policy", e.PolicySHA256)
		field("previous", e.PreviousPolicySHA256)
		if e.Detail != "" {
			b.WriteString(" " + quoteIfNeeded(e.Detail))
		}
	case KindLost:
		fmt.Fprintf(&b, " lost=%d", e.Lost)
		if e.Detail != "" {
			b.WriteString(" " + quoteIfNeeded(e.Detail))
		}
	default:
		b.WriteString(" " + e.Server)
		if e.Detail != "" {
			b.WriteString(" " + quoteIfNeeded(e.Detail))
		}
	}
	field("session", e.Session)
	if e.Client != nil && (e.Client.Name != "" || e.Client.Version != "") {
		field("client", strings.TrimSuffix(e.Client.Name+"/"+e.Client.Version, "/"))
	}
	field("principal", e.Principal)
	field("profile", e.Profile)
	if len(e.Arguments) > 0 {
		if args, err := json.Marshal(e.Arguments); err == nil {
			fmt.Fprintf(&b, " args=%s", args)
		}
	}
	if e.Event == KindResult {
		field("preview", e.ResultPreview)
	}
	field("reason", e.Reason)
	field("error", e.Error)
	field("replica", e.Replica)
	return b.String()
}

// decisionLabel is how Format names a decision event's decision: "DENY",
// or for one made in shadow mode what happened and what would have:
// "ALLOW (shadow: would deny)", "ALLOW (shadow)" for an allow.
func decisionLabel(e Event) string {
	switch {
	case !e.Shadow:
		return strings.ToUpper(e.Decision)
	case e.Decision == DecisionAllow:
		return "ALLOW (shadow)"
	}
	return "ALLOW (shadow: would " + e.Decision + ")"
}

func quoteIfNeeded(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\r\n\"=") || !strconv.CanBackquote(s) {
		return strconv.Quote(s)
	}
	return s
}

// Follow reads the lines appended to the file at path after offset, calling
// fn with each complete line (without its newline), polling every poll
// interval until ctx is done, when it returns nil. When the log rotates it
// finishes the old file, reads any rotated files that came after it, and goes
// on with the new current file, so no event is skipped even if the log
// rotated several times between two polls (unless max_backups pruned a file
// before Follow got to it). A truncated file is read again from its start.
func Follow(ctx context.Context, path string, offset int64, poll time.Duration, fn func(line []byte) error) error {
	if poll <= 0 {
		poll = 250 * time.Millisecond
	}
	var (
		f       *os.File
		partial []byte
		name    = path      // the file to open next
		prev    os.FileInfo // the file read before, after a rotation
	)
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		if f == nil {
			var err error
			if f, err = os.Open(name); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("following %s: %w", path, err)
			}
			if f == nil && name != path {
				name = path // a backup pruned before we got to it
				continue
			}
			if f != nil && prev != nil {
				// If path rotated again before it was opened, the file
				// after prev is a backup that must be read first.
				fi, err := f.Stat()
				if err != nil {
					return fmt.Errorf("following %s: %w", path, err)
				}
				if next := nextFile(path, prev); next != path {
					if ni, err := os.Stat(next); err == nil && !os.SameFile(ni, fi) {
						f.Close()
						f, name = nil, next
						continue
					}
				}
				prev = nil
			}
			if f != nil {
				if _, err := f.Seek(offset, io.SeekStart); err != nil {
					return fmt.Errorf("following %s: %w", path, err)
				}
			}
		}
		if f != nil {
			// Check for rotation before reading: once path names another
			// file, the writer has finished with f, so reading f to its end
			// gets all of it.
			rotated := replaced(f, path, offset)
			buf, err := io.ReadAll(f)
			if err != nil {
				return fmt.Errorf("following %s: %w", path, err)
			}
			offset += int64(len(buf))
			partial = append(partial, buf...)
			for {
				i := bytes.IndexByte(partial, '\n')
				if i < 0 {
					break
				}
				if err := fn(partial[:i]); err != nil {
					return err
				}
				partial = partial[i+1:]
			}
			if rotated {
				if prev, err = f.Stat(); err != nil {
					return fmt.Errorf("following %s: %w", path, err)
				}
				name = nextFile(path, prev)
				f.Close()
				f, offset, partial = nil, 0, nil
				continue // read the next file at once
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// replaced reports whether path no longer names f (rotation) or f shrank
// below offset (truncation).
func replaced(f *os.File, path string, offset int64) bool {
	cur, err := os.Stat(path)
	if err != nil {
		return false // gone for now: keep f until a new file appears
	}
	old, err := f.Stat()
	if err != nil {
		return true
	}
	return !os.SameFile(cur, old) || old.Size() < offset
}

// nextFile returns the file of the log at path that follows the file fi in
// chain order: the next rotated file, or path itself.
func nextFile(path string, fi os.FileInfo) string {
	backups, err := backupFiles(path)
	if err != nil {
		return path
	}
	for i, b := range backups {
		if bi, err := os.Stat(b.path); err == nil && os.SameFile(bi, fi) {
			if i+1 < len(backups) {
				return backups[i+1].path
			}
			break
		}
	}
	return path
}
