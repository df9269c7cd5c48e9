package proxy

import (
	"path/filepath"

	"github.com/mcpwarden/mcpwarden/rules"
)

// decide is the rules' verdict for a call; for a server whose paths are on
// this machine (resolve_symlinks), the call is decided a second time with
// its paths as they resolve on disk, and the more restrictive verdict
// stands, so a symlink inside an allowed directory cannot reach outside it.
func (s *Server) decide(c *call) rules.Verdict {
	rc := c.rulesCall()
	v := c.policy.Decide(rc)
	if !s.settings.Load().resolveSymlinks[c.tool.Server] || v.Decision == rules.Deny {
		return v
	}
	resolved, changed := c.policy.WithPaths(rc, resolveOnDisk)
	if !changed {
		return v
	}
	if r := c.policy.Decide(resolved); r.Decision < v.Decision { // Deny < Ask < Allow
		r.Reason += " (with symlinks followed)"
		return r
	}
	return v
}

// resolveOnDisk follows the symlinks of the longest existing prefix of the
// clean absolute path p (a file about to be created has none of its own,
// but its directory may be a link). A path nothing of which exists is
// returned as it is.
func resolveOnDisk(p string) string {
	dir, rest := p, ""
	for {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return p
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}
