// Package ondisk reads a call's path arguments as they lead on this
// machine: each raw reading resolved with its symlinks followed (in the
// view of the server's process, for /proc/self), for the rules' physical
// forms, and the built-in self-protection tried against them. The proxy
// decides with it, and so does `check`.
package ondisk

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mcpwarden/mcpwarden/rules"
)

// PhysicalForms resolves on disk every raw reading of every path-like value
// of c (rules.PathForm.Raw), for rules.Call.Physical; nil when there is
// none. It is what the proxy does for a server with resolve_symlinks, for
// any other caller (`check`) that must decide as the proxy does. It knows
// no server process: a path through /proc/self (or /dev/fd, …) is left
// there, and the rules only guess where it leads.
func PhysicalForms(p *rules.Policy, c rules.Call) map[string]string {
	return PhysicalFormsIn(p, c, 0)
}

// PhysicalFormsIn is PhysicalForms in the view of the server process pid
// (0 = unknown): /proc/self and /proc/thread-self, wherever a path or a
// link on it reaches them, are that process's, so /proc/self/cwd/x is x
// in the server's working directory, not in mcpwarden's.
func PhysicalFormsIn(p *rules.Policy, c rules.Call, pid int) map[string]string {
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
			m[raw] = resolvePhysical(raw, pid)
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
// lexically; the result is clean and absolute. /proc/self and
// /proc/thread-self are read as the process pid's; with pid 0 the walk
// stops there and the result is /proc/self/ and the rest of the path as
// written, uncleaned (where it leads is not known).
func resolvePhysical(raw string, pid int) string {
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
		if next == "/proc/self" || next == "/proc/thread-self" {
			if pid <= 0 {
				return next + "/" + rest
			}
			resolved = "/proc/" + strconv.Itoa(pid)
			if comp == "thread-self" {
				resolved += "/task/" + strconv.Itoa(pid)
			}
			continue
		}
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

// SelfProtectionOnDisk is v, the rules' verdict for rc on a server without
// resolve_symlinks, as the proxy settles it: unless v denies, a call to a
// server on this machine is also tried against the built-in
// self-protection with symlinks followed (rc.Physical filled in), whose
// deny then stands. `check` calls it to decide as the proxy does.
func SelfProtectionOnDisk(p *rules.Policy, rc *rules.Call, v rules.Verdict) rules.Verdict {
	return SelfProtectionOnDiskIn(p, rc, v, 0)
}

// SelfProtectionOnDiskIn is SelfProtectionOnDisk with the serving process
// pid (0 = unknown; see PhysicalFormsIn).
func SelfProtectionOnDiskIn(p *rules.Policy, rc *rules.Call, v rules.Verdict, pid int) rules.Verdict {
	if v.Decision == rules.Deny || !p.IsLocal(rc.Server) {
		return v
	}
	rc.Physical = PhysicalFormsIn(p, *rc, pid)
	if r, hit := p.SelfProtection(*rc); hit {
		r.Reason += " (with symlinks followed)"
		return r
	}
	return v
}
