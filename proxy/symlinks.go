package proxy

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpwarden/mcpwarden/rules"
)

// PhysicalForms resolves on disk every raw reading of every path-like value
// of c (rules.PathForm.Raw), for rules.Call.Physical; nil when there is
// none. It is what the proxy does for a server with resolve_symlinks, for
// any other caller (`check`) that must decide as the proxy does.
func PhysicalForms(p *rules.Policy, c rules.Call) map[string]string {
	forms, _ := p.PathForms(c)
	var m map[string]string
	for _, f := range forms {
		for _, raw := range f.Raw {
			if _, ok := m[raw]; ok {
				continue
			}
			if m == nil {
				m = make(map[string]string, len(forms))
			}
			m[raw] = resolvePhysical(raw)
		}
	}
	return m
}

// maxSymlinks bounds the links followed in one path, as the kernel's
// ELOOP limit does.
const maxSymlinks = 40

// resolvePhysical resolves the absolute, uncleaned path raw component by
// component as the kernel does: a symlink is replaced by its target before
// the components after it are read, so `..` after a link climbs out of the
// link's target, not out of the directory holding the link
// (`app/l/../secret.txt` with l → /outside/dir is /outside/secret.txt).
// Components that do not exist (a file about to be created) are joined
// lexically; the result is clean and absolute.
func resolvePhysical(raw string) string {
	resolved, rest := "/", raw
	links, missing := 0, false
	for rest != "" {
		var comp string
		comp, rest, _ = strings.Cut(strings.TrimLeft(rest, "/"), "/")
		switch comp {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, comp)
		if missing {
			resolved = next
			continue
		}
		fi, err := os.Lstat(next)
		switch {
		case err != nil:
			missing = true // the kernel stops here; what follows is lexical
			resolved = next
			continue
		case fi.Mode()&os.ModeSymlink == 0:
			resolved = next
			continue
		}
		target, err := os.Readlink(next)
		if links++; err != nil || links > maxSymlinks {
			return filepath.Join(next, rest) // the kernel fails (ELOOP); any reading will do
		}
		if filepath.IsAbs(target) {
			resolved = "/"
		}
		rest = target + "/" + rest
	}
	return resolved
}
