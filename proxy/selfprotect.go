package proxy

import "github.com/mcpwarden/mcpwarden/rules"

// guardOwnFiles applies the built-in self-protection (rules.Policy.
// SelfProtection) to c's paths as they resolve on disk, for a server on
// this machine whose resolve_symlinks is off: decide follows links only
// when it is on, and no setting may open a way to mcpwarden's own files.
func (s *Server) guardOwnFiles(c *call, v rules.Verdict) rules.Verdict {
	if v.Decision == rules.Deny || !c.policy.IsLocal(c.tool.Server) || s.settings.Load().resolveSymlinks[c.tool.Server] {
		return v
	}
	resolved, changed := c.policy.WithPaths(c.rulesCall(), resolveOnDisk)
	if !changed {
		return v
	}
	if r, hit := c.policy.SelfProtection(resolved); hit {
		r.Reason += " (with symlinks followed)"
		return r
	}
	return v
}
