package proxy

import (
	"context"

	"github.com/mcpwarden/mcpwarden/proxy/connect"
	"github.com/mcpwarden/mcpwarden/proxy/ondisk"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// decide is the rules' verdict for a call, with its principal and, when a
// rule reads them, its pinned tool's annotations. For a server whose paths
// are on this machine (resolve_symlinks), every known reading of each
// path-like value is first resolved on disk as the kernel resolves it, and
// the rules decide on those physical forms as well as on the others, so
// that neither a symlink inside an allowed directory nor a `..` after one
// reaches outside it. For a local server with resolve_symlinks off, the
// built-in self-protection still follows links: no setting may open a way
// to mcpwarden's own files. Paths are resolved in the server's view:
// /proc/self is the process serving the server's calls (see serverPID).
//
// It also counts c against the limits it matches, escalating the verdict
// by those it exceeds, and sets the labels c carries (c.labels), read
// from the same forms.
func (s *Server) decide(ctx context.Context, c *call) rules.Verdict {
	rc := c.rulesCall()
	if c.policy.ReadsAnnotations() {
		rc.Facts = s.review.facts(c.tool)
	}
	v := s.decideForms(c, &rc)
	if c.policy.UsesLimits() {
		v = s.overLimits(ctx, c, rc, v)
	}
	if rc.Tool == rules.ToolConnect {
		v = connect.Refuse(c.policy, rc.Server, rc.Arguments, v)
	}
	if c.policy.UsesLabels() {
		c.labels = c.policy.Labels(rc)
	}
	return v
}

// decideForms is decide's verdict for rc, the call c as the rules see it;
// it fills in rc.Physical where it reads the physical forms.
func (s *Server) decideForms(c *call, rc *rules.Call) rules.Verdict {
	if c.snap.servers[c.tool.Server].ResolveSymlinks {
		rc.Physical = ondisk.PhysicalFormsIn(c.policy, *rc, s.serverPID(c.tool.Server))
		return c.policy.Decide(*rc)
	}
	return ondisk.SelfProtectionOnDiskIn(c.policy, rc, c.policy.Decide(*rc), s.serverPID(c.tool.Server))
}

// A processes is an Upstream that knows the process serving a server on
// this machine (upstream.Pool does).
type processes interface {
	PID(server string) (int, bool)
}

var _ processes = (*upstream.Pool)(nil)

// serverPID is the process id of the process serving server's calls, or 0
// when it is not known (a stand-in upstream, an isolated server).
func (b *base) serverPID(server string) int {
	if up, ok := b.upstream.(processes); ok {
		if pid, ok := up.PID(server); ok {
			return pid
		}
	}
	return 0
}
