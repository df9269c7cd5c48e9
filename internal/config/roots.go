package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ExtraRoots are the directories besides Root against which the server may
// resolve a relative path argument, for rules.ServerSpec.ExtraRoots. For a
// stdio server they are its path_root, if set, and every argument that
// names an existing directory (or, for a `-flag=value` argument, whose
// value does), after `~/` is expanded with the server's home and a relative
// argument is resolved against its cwd: server-filesystem resolves a
// relative path against the directory it was given, not its cwd, and
// other servers take theirs as a flag. A remote server has none; its
// path_root is its Root. Root itself and repeats are left out. It reads
// the filesystem, so the rules need not.
func (c *Config) ExtraRoots(name, workDir string) []string {
	s := c.Servers[name]
	if s.EffectiveTransport() != TransportStdio {
		return nil
	}
	root := c.ServerDir(name, workDir)
	var dirs []string
	add := func(dir string) {
		if dir != root && !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	if s.PathRoot != "" {
		add(filepath.Clean(s.PathRoot))
	}
	for _, arg := range s.Args {
		candidates := []string{arg}
		if flag, value, ok := strings.Cut(arg, "="); ok && strings.HasPrefix(flag, "-") {
			candidates = append(candidates, value)
		}
		for _, v := range candidates {
			if dir, ok := c.argDir(name, root, v); ok {
				add(dir)
			}
		}
	}
	return dirs
}

// argDir returns the clean absolute directory the argument v of server
// name names, as the server would resolve it (`~` to its home, a relative
// v against root, its cwd), and whether it is an existing directory. A
// relative v with no known root names nothing.
func (c *Config) argDir(name, root, v string) (string, bool) {
	if v == "" {
		return "", false
	}
	if rest, ok := strings.CutPrefix(v, "~"); ok && (rest == "" || rest[0] == '/') {
		home := c.Home(name)
		if home == "" {
			return "", false
		}
		v = home + rest
	}
	if !filepath.IsAbs(v) {
		if !filepath.IsAbs(root) {
			return "", false
		}
		v = filepath.Join(root, v)
	}
	v = filepath.Clean(v)
	if fi, err := os.Stat(v); err != nil || !fi.IsDir() {
		return "", false
	}
	return v, true
}
