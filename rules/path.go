package rules

import (
	"path/filepath"
	"strings"
)

// normalisePath returns the absolute, cleaned form of a path-like value, and
// ok false when its location cannot be known.
//
// An absolute value is cleaned (`/home/../etc/passwd` is `/etc/passwd`,
// `//etc/x` is `/etc/x`); a relative one is joined to root first. The
// location is unknown for a relative value without a root, and for a value
// the upstream may expand in ways the rules cannot see: a leading `~` (home
// directories; the reference filesystem server expands it) or a URI such as
// `file:///etc/passwd`. Cleaning an already clean absolute path does not
// allocate.
func normalisePath(s, root string) (string, bool) {
	if unresolvable(s) {
		return "", false
	}
	if filepath.IsAbs(s) {
		return filepath.Clean(s), true
	}
	if root == "" {
		return "", false
	}
	return filepath.Join(root, s), true
}

// unresolvable reports whether s starts with `~` or a URI scheme.
func unresolvable(s string) bool {
	if strings.HasPrefix(s, "~") {
		return true
	}
	i := strings.Index(s, "://")
	if i <= 0 {
		return false
	}
	for j := 0; j < i; j++ {
		c := s[j]
		if !isIdentStart(c) && !('0' <= c && c <= '9') && c != '+' && c != '.' && c != '-' {
			return false
		}
	}
	return isIdentStart(s[0])
}

// guessPaths returns the readings of a path whose location is unknown that a
// deny or ask condition is tried against: the value cleaned as a relative
// path, and the value as if rooted at `/` (so `../../etc/passwd` also reads
// `/etc/passwd`). A deny or ask matches if either reading satisfies it; an
// allow never matches an unknown location.
func guessPaths(s string) (relative, rooted string) {
	return filepath.Clean(s), filepath.Join("/", s)
}

// within reports whether the clean absolute path p is dir or beneath it;
// `/srv/apple` is not within `/srv/app`.
func within(p, dir string) bool {
	if !strings.HasPrefix(p, dir) {
		return false
	}
	return len(p) == len(dir) || dir == "/" || p[len(dir)] == '/'
}
