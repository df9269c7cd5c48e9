package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// lookPath resolves name as exec would with the server's PATH.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		abs, err := filepath.Abs(name)
		if err != nil {
			return "", fmt.Errorf("sandbox: resolving %q: %w", name, err)
		}
		return abs, nil
	}
	pathEnv := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		cand := filepath.Join(dir, name)
		if fi, err := os.Stat(cand); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return cand, nil
		}
	}
	return "", fmt.Errorf("sandbox: command %q not found in the server's PATH %q: write its absolute path", name, pathEnv)
}
