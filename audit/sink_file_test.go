package audit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFileModeIs0600(t *testing.T) {
	t.Parallel()
	l, path := openTestLog(t, Config{Fsync: true})
	if err := l.Write(t.Context(), decisionEvent(0)); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("mode = %v, want 0600", got)
	}
}

func TestOpenTightensAWideMode(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil { // past the umask
		t.Fatal(err)
	}
	openTestLog(t, Config{Path: path})
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("mode = %v, want 0600", got)
	}
}

func TestRotationKeepsTheChainAcrossFiles(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := OpenFile(path, FileOptions{MaxBytes: 2000, Fsync: true})
	if err != nil {
		t.Fatal(err)
	}
	l := New(s, Config{})
	const events = 50
	for i := range events {
		if err := l.Write(t.Context(), decisionEvent(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	files, err := Files(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("got files %v, want several rotations", files)
	}
	if got, want := files[0], filepath.Join(filepath.Dir(path), "audit-000001.jsonl"); got != want {
		t.Errorf("oldest file = %s, want %s", got, want)
	}
	total := 0
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > 2000 {
			t.Errorf("%s has %d bytes, over the limit", f, fi.Size())
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v", f, fi.Mode().Perm())
		}
		total += countLines(t, f)
	}
	if total != events {
		t.Errorf("files hold %d lines, want %d", total, events)
	}
	if n, err := Verify(files...); err != nil || n != events {
		t.Errorf("Verify = %d, %v; want %d, nil", n, err, events)
	}
	// Out of order, the files do not verify.
	swapped := append([]string{files[1], files[0]}, files[2:]...)
	if _, err := Verify(swapped...); !errors.Is(err, ErrChainBroken) {
		t.Errorf("Verify of swapped files: got %v, want ErrChainBroken", err)
	}
}

func TestMaxBackupsPrunesOldestAndPartialVerifies(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := OpenFile(path, FileOptions{MaxBytes: 1000, MaxBackups: 2})
	if err != nil {
		t.Fatal(err)
	}
	l := New(s, Config{})
	for i := range 40 {
		if err := l.Write(t.Context(), decisionEvent(i)); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	files, err := Files(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 {
		t.Fatalf("got files %v, want 2 backups and the current file", files)
	}
	if _, err := Verify(files...); !errors.Is(err, ErrChainBroken) {
		t.Errorf("strict Verify of a pruned log: got %v, want ErrChainBroken", err)
	}
	if _, err := VerifyWith(VerifyOptions{Partial: true}, files...); err != nil {
		t.Errorf("partial Verify of a pruned log: %v", err)
	}
}

func TestReopenContinuesTheChain(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	for run := range 3 {
		l, err := Open(Config{Path: path}, nil)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		for i := range 5 {
			if err := l.Write(t.Context(), decisionEvent(i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := Verify(path); err != nil || n != 15 {
		t.Errorf("Verify = %d, %v; want 15, nil", n, err)
	}
}

func TestReopenAfterRotationContinuesFromTheNewestBackup(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := OpenFile(path, FileOptions{MaxBytes: 800})
	if err != nil {
		t.Fatal(err)
	}
	l := New(s, Config{})
	for i := range 10 {
		if err := l.Write(t.Context(), decisionEvent(i)); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	// As if the process died right after renaming: the current file is gone.
	backups, _ := backupFiles(path)
	if err := os.Rename(path, backupName(path, backups[len(backups)-1].seq+1)); err != nil {
		t.Fatal(err)
	}
	l, err = Open(Config{Path: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Write(t.Context(), decisionEvent(10)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	files, _ := Files(path)
	if n, err := Verify(files...); err != nil || n != 11 {
		t.Errorf("Verify = %d, %v; want 11, nil", n, err)
	}
}

func TestReopenRefusesAnIncompleteLastLine(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(path, []byte(`{"event":"decision","prev_sha256":""}`+"\n"+`{"event":"dec`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Config{Path: path}, nil); !errors.Is(err, ErrIncompleteLine) {
		t.Errorf("Open: got %v, want ErrIncompleteLine", err)
	}
}

func TestASecondWriterIsLockedOut(t *testing.T) {
	t.Parallel()
	l, path := openTestLog(t, Config{})
	if _, err := Open(Config{Path: path}, nil); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: got %v, want ErrLocked", err)
	}
	l.Close()
	l2, err := Open(Config{Path: path}, nil)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	l2.Close()
}

func TestFileSinkRefusesPartialLines(t *testing.T) {
	t.Parallel()
	s, err := OpenFile(filepath.Join(t.TempDir(), "a.jsonl"), FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tests := []struct {
		name string
		line string
	}{
		{"an empty line", ""},
		{"a line without newline", "{}"},
		{"two lines", "{}\n{}\n"},
	}
	for _, tt := range tests {
		if err := s.Write(t.Context(), []byte(tt.line)); err == nil {
			t.Errorf("%s: Write succeeded", tt.name)
		}
	}
}

func TestLastLineReadsAcrossChunks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	long := strings.Repeat("x", 20000)
	tests := []struct {
		name    string
		content string
		want    string
	}{
		{"an empty file", "", ""},
		{"one line", "a\n", "a"},
		{"a long last line", "a\n" + long + "\n", long},
		{"a long first line", long + "\nb\n", "b"},
		{"one long line", long + "\n", long},
	}
	for i, tt := range tests {
		p := filepath.Join(dir, strings.Repeat("f", i+1))
		if err := os.WriteFile(p, []byte(tt.content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := lastLine(p)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if diff := cmp.Diff(tt.want, string(got)); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", tt.name, diff)
		}
	}
}

func TestFilesIgnoresLookalikes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, n := range []string{"audit.jsonl", "audit-000002.jsonl", "audit-000010.jsonl", "audit-000001.jsonl", "audit-12.jsonl", "audit-00000x.jsonl", "audit.jsonl.lock", "other-000001.jsonl"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Files(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range got {
		names = append(names, filepath.Base(g))
	}
	want := []string{"audit-000001.jsonl", "audit-000002.jsonl", "audit-000010.jsonl", "audit.jsonl"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("Files (-want +got):\n%s", diff)
	}
}
