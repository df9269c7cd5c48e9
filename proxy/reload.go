package proxy

import (
	"context"
	"maps"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/proxy/naming"
	"github.com/mcpwarden/mcpwarden/rules"
)

// Settings are what a reload of the configuration replaces in a running
// Server (see Options for each).
type Settings struct {
	Policy  *rules.Policy
	Naming  naming.Scheme
	Servers map[string]ServerOptions
}

// ServerOptions are what the proxy applies to one upstream server besides
// its rules. The zero value forwards the server's sampling requests and
// decides its paths as written.
type ServerOptions struct {
	// Sampling is the server's policy.sampling: rules.SamplingDeny
	// refuses its sampling requests to the client.
	Sampling rules.Sampling
	// ResolveSymlinks is set for a server whose paths are on this
	// machine: its path arguments are also decided with symlinks followed
	// (servers.<name>.resolve_symlinks, on by default for stdio servers).
	ResolveSymlinks bool
}

// Reload swaps in the settings next, in one step: a call sees the old
// policy, naming and server options, or the new ones, never some of each. Calls
// in flight finish under the snapshot they started with; calls after it
// use the new one. Tools are
// re-registered under the new naming, clients are told the tool list
// changed (what is hidden may differ), and the new policy's hash is
// audited. removed are the servers no longer configured: their tools,
// resources and prompts are withdrawn. Added or changed servers announce
// themselves through UpstreamChanged when they are up.
func (s *Server) Reload(ctx context.Context, next Settings, removed []string) {
	s.tools.mu.Lock()
	cur := s.current()
	// Every server's tools are staged under the new naming against the
	// names registered now, then the new snapshot is swapped in once.
	base := &snapshot{policy: next.Policy, naming: next.Naming, names: cur.names, servers: next.Servers}
	staged := base
	var regs []registration
	stage := func(name string, tools []mcp.Tool, remove bool, failure string) {
		snap, reg, _, _, _, err := s.tools.stage(base, name, tools, remove)
		if err != nil {
			s.logger.Error(failure, "server", name, "err", err)
			return
		}
		staged = snap
		regs = append(regs, reg)
	}
	for _, name := range removed {
		stage(name, nil, true, "withdrawing a removed server's tools")
	}
	for _, name := range slices.Sorted(maps.Keys(s.tools.byServer)) {
		stage(name, s.tools.byServer[name], false, "re-registering tools after a reload; keeping the previous names")
	}
	s.snap.Store(staged)
	s.tools.register(merge(regs))
	s.tools.mu.Unlock()

	s.catalog.mu.Lock()
	for _, name := range removed {
		delete(s.catalog.resources, name)
		delete(s.catalog.templates, name)
		delete(s.catalog.prompts, name)
	}
	if s.catalog.resources != nil {
		s.catalog.register()
	}
	s.catalog.mu.Unlock()

	s.mcp.SendNotificationToAllClients("notifications/tools/list_changed", nil)
	s.rootsChanged(ctx, cur.policy, next.Policy)
	s.writeAudit(ctx, audit.Event{Event: audit.KindToolsChanged, Detail: "config reloaded", PolicySHA256: next.Policy.SHA256()})
	s.logger.Info("config reloaded", "policy_sha256", next.Policy.SHA256(), "removed_servers", removed)
}

// rootsChanged tells each upstream whose workspace differs between the
// policies was and now that its roots changed: its roots/list is answered
// with the workspace (ListRoots).
func (s *Server) rootsChanged(ctx context.Context, was, now *rules.Policy) {
	for _, name := range s.upstream.Names() {
		before, _ := was.Workspace(name)
		after, _ := now.Workspace(name)
		if !slices.Equal(before, after) {
			s.upstream.RootsChanged(ctx, name)
		}
	}
}

// CheckNaming reports whether scheme would give every tool now exposed a
// distinct, client-safe wire name, so that a reload can be refused whole
// instead of applied in part.
func (s *Server) CheckNaming(scheme naming.Scheme) error {
	s.tools.mu.Lock()
	defer s.tools.mu.Unlock()
	_, err := scheme.Names(s.tools.byServer)
	return err
}

// merge joins the registrations of several servers into one: every wire
// name gone is deleted unless another server's tool now has it, then
// every tool is added.
func merge(regs []registration) registration {
	var all registration
	kept := map[string]bool{}
	for _, r := range regs {
		all.defs = append(all.defs, r.defs...)
		for _, d := range r.defs {
			kept[d.Tool.Name] = true
		}
	}
	for _, r := range regs {
		for _, wire := range r.gone {
			if !kept[wire] {
				all.gone = append(all.gone, wire)
			}
		}
	}
	return all
}
