package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mcpwarden/mcpwarden/internal/atomicfile"
)

// writeNew writes data to path (0600: it may name servers and variables),
// refusing to replace an existing file unless force. The folder is created
// (0700) when it does not exist.
func writeNew(path string, data []byte, force bool) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return usageErr("%s exists: choose another --out, or --force to overwrite it", path)
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// backupFile copies data to the first free name of path.bak, path.bak.1, ...
// and returns it. An earlier backup is never replaced, so the original of a
// first import survives a second one.
func backupFile(path string, data []byte) (string, error) {
	mode := fs.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	for i := 0; ; i++ {
		name := path + ".bak"
		if i > 0 {
			name = fmt.Sprintf("%s.bak.%d", path, i)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("backing up %s: %w", path, err)
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			return "", fmt.Errorf("backing up %s: %w", path, err)
		}
		return name, f.Close()
	}
}

// replaceFile writes data to path through a temporary file and a rename,
// keeping path's permissions, so a crash leaves the old or the new file.
func replaceFile(path string, data []byte) error {
	return atomicfile.Replace(path, data, 0o600)
}
