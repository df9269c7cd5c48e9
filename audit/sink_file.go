package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// FileOptions configure a FileSink. The zero value appends without fsync and
// never rotates.
//
// Fsync syncs the file after every line (and the directory after creating or
// rotating a file), so a line is on disk when Write returns. MaxBytes > 0
// rotates before a line would take the file over that size; a line bigger
// than MaxBytes gets a file of its own. MaxBackups > 0 deletes the oldest
// rotated files beyond that many; 0 keeps them all.
type FileOptions struct {
	Fsync      bool
	MaxBytes   int64
	MaxBackups int
}

// A FileSink appends lines to a file opened with O_APPEND and mode 0600.
// Rotation renames the file to its next backup name, <stem>-NNNNNN<ext>
// (audit.jsonl becomes audit-000001.jsonl, then audit-000002.jsonl, ...: the
// numbers only grow), and starts a new file; the hash chain runs on across
// files, and Files lists them in chain order. An exclusive lock on
// <path>.lock, held until Close, keeps a second process (or a second FileSink
// in this process) from writing the same log and forking its chain. A
// FileSink is safe for concurrent use.
//
// A FileSink survives a failing disk: when a write, a sync or a rotation
// fails, the line is not stored (any part of it already written is cut back
// off), the file is closed, and the next Write reopens the log before
// anything else. So writing resumes by itself once the directory works
// again, and the Log's hash chain continues from the last line stored.
type FileSink struct {
	path string
	opts FileOptions
	lock *os.File
	last string // hash of the last line found at open

	mu     sync.Mutex
	f      *os.File    // nil after a failure: Write reopens the log first
	info   os.FileInfo // of the file f is or was, to recognise it on reopen
	size   int64       // bytes of whole lines in that file
	closed bool
	rotns  atomic.Int64 // rotations since OpenFile, read without the mutex
}

// ErrLocked is returned by OpenFile when another FileSink holds the log.
var ErrLocked = errors.New("audit log in use by another writer")

// ErrIncompleteLine is returned by OpenFile when the log does not end with a
// newline, which happens when a write was cut short (a crash, a full disk).
// The log is not repaired automatically, since what is cut off may be
// evidence: the error names the command that repairs it, `mcpwarden audit
// repair FILE` (Repair), which keeps the torn tail in a file of its own.
var ErrIncompleteLine = errors.New("audit log ends with an incomplete line")

// OpenFile opens (creating it and its directory if needed) the log at path
// for appending, and reads the hash of its last line (or of the newest
// rotated file's last line, if path is empty) so the chain continues.
func OpenFile(path string, opts FileOptions) (*FileSink, error) {
	if path == "" {
		return nil, errors.New("audit file sink: empty path")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating audit log directory: %w", err)
	}
	lock, err := takeLock(path)
	if err != nil {
		return nil, err
	}
	return openLocked(path, opts, lock)
}

// lockWait bounds how long takeLock waits for a lock that is held. A
// lock outlives the close that releases it while a child process forked
// meanwhile, by any goroutine of the process that held it, has not yet
// started its program: until then the child holds a copy of every
// descriptor (close-on-exec ones too), and with it the lock. A writer
// that holds the log stays ErrLocked.
const lockWait = 500 * time.Millisecond

// takeLock takes the exclusive lock of the log at path, <path>.lock.
func takeLock(path string) (*os.File, error) {
	lock, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening audit lock: %w", err)
	}
	for deadline := time.Now().Add(lockWait); ; {
		err = lockFile(lock)
		if !errors.Is(err, ErrLocked) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("audit log %q: %w", path, err)
	}
	return lock, nil
}

// openLocked is OpenFile once lock is held; the sink owns lock, which is
// closed on error.
func openLocked(path string, opts FileOptions, lock *os.File) (*FileSink, error) {
	s := &FileSink{path: path, opts: opts, lock: lock}
	if err := s.open(); err != nil {
		lock.Close()
		return nil, err
	}
	last, err := s.findLast()
	if err != nil {
		s.f.Close()
		lock.Close()
		return nil, err
	}
	s.last = last
	return s, nil
}

// open opens the file at s.path, creating it if needed, as s.f. A file that
// is the one written before a failure and holds more than the whole lines
// written to it (a torn write that could not be cut off then) is cut back
// to them now; any other file must end with a newline.
func (s *FileSink) open() error {
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("opening audit log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("opening audit log: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := f.Chmod(0o600); err != nil {
			f.Close()
			return fmt.Errorf("audit log %q has mode %v and cannot be restricted to 0600: %w", s.path, fi.Mode().Perm(), err)
		}
	}
	size := fi.Size()
	if s.info != nil && os.SameFile(s.info, fi) && size > s.size {
		if err := f.Truncate(s.size); err != nil {
			f.Close()
			return fmt.Errorf("removing a partial line from audit log: %w", err)
		}
		size = s.size
	} else if s.info != nil && size > 0 {
		if _, err := lastLine(s.path); err != nil {
			f.Close()
			return err
		}
	}
	if s.opts.Fsync && size == 0 {
		if err := syncDir(filepath.Dir(s.path)); err != nil {
			f.Close()
			return fmt.Errorf("syncing audit log directory: %w", err)
		}
	}
	s.f, s.info, s.size = f, fi, size
	return nil
}

// fail closes the file after a failed write, sync or rotation, so the next
// Write reopens it, and returns err.
func (s *FileSink) fail(err error) error {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
	return err
}

// findLast returns the hash of the last line of the log, looking into the
// rotated files when the current one is empty.
func (s *FileSink) findLast() (string, error) {
	files, err := Files(s.path)
	if err != nil {
		return "", err
	}
	for i := len(files) - 1; i >= 0; i-- {
		line, err := lastLine(files[i])
		if errors.Is(err, ErrIncompleteLine) {
			return "", fmt.Errorf("%w: a write was cut short (a crash, a full disk); run `mcpwarden audit repair %s` to move the torn tail aside into a file of its own, record it in the log and verify the rest, then start again", err, s.path)
		}
		if err != nil {
			return "", err
		}
		if line != nil {
			return hashLine(line), nil
		}
	}
	return "", nil
}

// LastSHA256 returns the hash of the last line the log held when it was
// opened ("" for a new log). New continues the chain from it.
func (s *FileSink) LastSHA256() string { return s.last }

// Rotations returns how many times the sink rotated since it was opened:
// a Log that signs checkpoints writes one after each rotation.
func (s *FileSink) Rotations() int64 { return s.rotns.Load() }

// Path returns the path of the current file.
func (s *FileSink) Path() string { return s.path }

// Write appends line, rotating first if it would not fit. A log closed by
// an earlier failure is reopened first. A failed write or sync cuts what it
// left of the line back off, so the next line starts clean, and closes the
// file.
func (s *FileSink) Write(ctx context.Context, line []byte) error {
	if len(line) == 0 || line[len(line)-1] != '\n' || bytes.IndexByte(line, '\n') != len(line)-1 {
		return errors.New("audit file sink: a line must be one line ending with a newline")
	}
	_, err := s.WriteLines(ctx, line)
	return err
}

// WriteLines appends lines, one or more whole lines, as Write would append
// each in turn, but with one write (and one sync, with Fsync) for each run
// of lines that fits before a rotation. It returns how many bytes of lines
// are stored: on error, the lines before that point are stored (and
// synced) and the rest are not, and the file is closed as after a failed
// Write.
func (s *FileSink) WriteLines(_ context.Context, lines []byte) (int, error) {
	if len(lines) == 0 || lines[len(lines)-1] != '\n' {
		return 0, errors.New("audit file sink: lines must be whole lines, each ending with a newline")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, ErrClosed
	}
	if s.f == nil {
		if err := s.open(); err != nil {
			return 0, fmt.Errorf("reopening audit log after a failure: %w", err)
		}
	}
	stored := 0
	for stored < len(lines) {
		run := s.fitting(lines[stored:])
		if run == 0 {
			if err := s.rotate(); err != nil {
				return stored, s.fail(fmt.Errorf("rotating audit log: %w", err))
			}
			continue
		}
		if err := s.append(lines[stored : stored+run]); err != nil {
			return stored, err
		}
		stored += run
	}
	return stored, nil
}

// syncs reports whether every write is synced (Fsync): the Log then
// stores lines that wait for each other with one WriteLines.
func (s *FileSink) syncs() bool { return s.opts.Fsync }

// fitting is how many bytes of whole lines from the start of lines fit in
// the file before it must rotate: 0 when the first line does not fit in a
// file that is not empty; the whole of lines without MaxBytes.
func (s *FileSink) fitting(lines []byte) int {
	if s.opts.MaxBytes <= 0 {
		return len(lines)
	}
	n := 0
	for n < len(lines) {
		end := n + bytes.IndexByte(lines[n:], '\n') + 1
		if s.size+int64(end) > s.opts.MaxBytes && (s.size > 0 || n > 0) {
			break
		}
		n = end
	}
	return n
}

// append writes run, whole lines, to the file and syncs it with Fsync. A
// failed write or sync cuts what it left back off and closes the file.
func (s *FileSink) append(run []byte) error {
	n, err := s.f.Write(run)
	if err == nil && s.opts.Fsync {
		if err = s.f.Sync(); err != nil {
			err = fmt.Errorf("syncing: %w", err)
		}
	}
	if err != nil {
		if n > 0 {
			if terr := s.f.Truncate(s.size); terr != nil {
				err = errors.Join(err, fmt.Errorf("removing partial line: %w", terr))
			}
		}
		return s.fail(fmt.Errorf("writing audit log: %w", err))
	}
	s.size += int64(n)
	return nil
}

// rotate closes the file, renames it to the next backup name and opens a
// new one. On error s.f is nil or the new file, never a closed file; the
// caller closes it either way, and the next Write reopens the log.
func (s *FileSink) rotate() error {
	err := s.f.Sync()
	err = errors.Join(err, s.f.Close())
	s.f = nil
	if err != nil {
		return err
	}
	backups, err := backupFiles(s.path)
	if err != nil {
		return err
	}
	next := 1
	if len(backups) > 0 {
		next = backups[len(backups)-1].seq + 1
	}
	if err := os.Rename(s.path, backupName(s.path, next)); err != nil {
		return err
	}
	s.rotns.Add(1)
	// open syncs the directory (with Fsync) for the new, empty file, which
	// makes the rename durable too.
	if err := s.open(); err != nil {
		return err
	}
	if s.opts.MaxBackups > 0 {
		backups = append(backups, backup{backupName(s.path, next), next})
		for len(backups) > s.opts.MaxBackups {
			if err := os.Remove(backups[0].path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			backups = backups[1:]
		}
	}
	return nil
}

// Close syncs and closes the file and releases the lock. It is idempotent.
func (s *FileSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var err error
	if s.f != nil {
		err = errors.Join(s.f.Sync(), s.f.Close())
	}
	err = errors.Join(err, s.lock.Close())
	if err != nil {
		return fmt.Errorf("closing audit log: %w", err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

type backup struct {
	path string
	seq  int
}

func splitName(path string) (stem, ext string) {
	ext = filepath.Ext(path)
	return strings.TrimSuffix(path, ext), ext
}

func backupName(path string, seq int) string {
	stem, ext := splitName(path)
	return fmt.Sprintf("%s-%06d%s", stem, seq, ext)
}

// backupFiles returns the rotated files of path, oldest first.
func backupFiles(path string) ([]backup, error) {
	stem, ext := splitName(path)
	matches, err := filepath.Glob(globEscape(stem) + "-[0-9][0-9][0-9][0-9][0-9][0-9]*" + globEscape(ext))
	if err != nil {
		return nil, err
	}
	var out []backup
	for _, m := range matches {
		digits := strings.TrimSuffix(strings.TrimPrefix(m, stem+"-"), ext)
		seq, err := strconv.Atoi(digits)
		if err != nil || seq <= 0 || strings.Trim(digits, "0123456789") != "" {
			continue
		}
		out = append(out, backup{m, seq})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out, nil
}

func globEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)
	return r.Replace(s)
}

// Files returns the files of the log at path in chain order: its rotated
// files, oldest first, then path itself if it exists. Verify(Files(p)...)
// checks a whole rotated log.
func Files(path string) ([]string, error) {
	backups, err := backupFiles(path)
	if err != nil {
		return nil, fmt.Errorf("listing rotated audit files of %q: %w", path, err)
	}
	var out []string
	for _, b := range backups {
		out = append(out, b.path)
	}
	if _, err := os.Stat(path); err == nil {
		out = append(out, path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return out, nil
}

func hashLine(line []byte) string {
	sum := sha256.Sum256(line)
	return hex.EncodeToString(sum[:])
}

// lastLine returns the last line of the file at path without its newline,
// or nil for an empty or missing file. It reads backwards from the end, so
// reopening a large log is cheap.
func lastLine(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading audit log: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading audit log: %w", err)
	}
	end := fi.Size()
	if end == 0 {
		return nil, nil
	}
	var tail []byte // the bytes from some offset to end
	const chunk = 8192
	for off := end; ; {
		n := int64(chunk)
		if off < n {
			n = off
		}
		off -= n
		buf := make([]byte, n, int(n)+len(tail))
		if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
			return nil, fmt.Errorf("reading audit log: %w", err)
		}
		tail = append(buf, tail...)
		if tail[len(tail)-1] != '\n' {
			return nil, fmt.Errorf("%s: %w", path, ErrIncompleteLine)
		}
		if i := bytes.LastIndexByte(tail[:len(tail)-1], '\n'); i >= 0 {
			return tail[i+1 : len(tail)-1], nil
		}
		if off == 0 {
			return tail[:len(tail)-1], nil
		}
	}
}
