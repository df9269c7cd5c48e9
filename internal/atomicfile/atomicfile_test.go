package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestWriteCreatesAFileWithItsMode(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "f.json")
	if err := Write(path, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	assertFile(t, path, "new", 0o600)
}

func TestWriteForcesItsModeOverAnOldFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	assertFile(t, path, "new", 0o600)
}

func TestReplaceKeepsTheOldFilesMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "settings.json")
	if err := os.WriteFile(path, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil { // past the umask
		t.Fatal(err)
	}
	if err := Replace(path, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	assertFile(t, path, "new", 0o640)
	if err := Replace(filepath.Join(dir, "fresh"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	assertFile(t, filepath.Join(dir, "fresh"), "x", 0o600)
}

func TestAFailedWriteLeavesTheOldFileAndNoTemporary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "target")
	if err := os.Mkdir(path, 0o700); err != nil { // a rename over a directory fails
		t.Fatal(err)
	}
	if err := Write(path, []byte("new"), 0o600); err == nil {
		t.Fatal("Write over a directory succeeded")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || !entries[0].IsDir() {
		t.Errorf("directory holds %v, want only the old directory", entries)
	}
}

func assertFile(t *testing.T, path, data string, perm fs.FileMode) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != data {
		t.Errorf("%s holds %q, want %q", path, got, data)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != perm {
		t.Errorf("%s has mode %#o, want %#o", path, fi.Mode().Perm(), perm)
	}
}
