// Package atomicfile replaces files atomically, so that a reader or a crash
// sees the old file or the new one, whole, never a mix.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// Write replaces the file at path with data, giving it the permissions
// perm: it writes a temporary file in the same directory, syncs it, renames
// it over path and syncs the directory. On error the file at path is left
// as it was and the temporary file is removed.
func Write(path string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	err = tmp.Chmod(perm)
	if err == nil {
		_, err = tmp.Write(data)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	return nil
}

// Replace is Write keeping the permissions of the file at path; perm is
// used only when there is no file there yet.
func Replace(path string, data []byte, perm fs.FileMode) error {
	if fi, err := os.Stat(path); err == nil {
		perm = fi.Mode().Perm()
	}
	return Write(path, data, perm)
}

// syncDir makes a rename in dir durable. Windows cannot sync a directory,
// and renames there need no such step.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	return errors.Join(err, d.Close())
}
