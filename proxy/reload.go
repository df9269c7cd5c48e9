package proxy

import (
	"context"
	"maps"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/rules"
)

// A Reload is a new configuration for a running Server.
type Reload struct {
	Policy         *rules.Policy
	Naming         Naming
	SamplingDenied map[string]bool
	// ResolveSymlinks names the local servers whose path arguments are also
	// decided with their symlinks followed.
	ResolveSymlinks map[string]bool
	// Removed are servers no longer configured: their tools, resources and
	// prompts are withdrawn. Added or changed servers announce themselves
	// through UpstreamChanged when they are up.
	Removed []string
}

// Reload swaps in a new configuration, in one step: a call sees the old
// policy, naming and options, or the new ones, never some of each. Calls
// in flight finish under the snapshot they started with; calls after it
// use the new one. Tools are
// re-registered under the new naming, clients are told the tool list
// changed (what is hidden may differ), and the new policy's hash is
// audited.
func (s *Server) Reload(ctx context.Context, r Reload) {
	s.tools.mu.Lock()
	cur := s.current()
	// Every server's tools are staged under the new naming against the
	// names registered now, then the new snapshot is swapped in once.
	base := &snapshot{policy: r.Policy, naming: r.Naming, names: cur.names, samplingDenied: r.SamplingDenied, resolveSymlinks: r.ResolveSymlinks}
	next := base
	var regs []registration
	stage := func(name string, tools []mcp.Tool, remove bool, failure string) {
		staged, reg, _, _, _, err := s.stageTools(base, name, tools, remove)
		if err != nil {
			s.logger.Error(failure, "server", name, "err", err)
			return
		}
		next = staged
		regs = append(regs, reg)
	}
	for _, name := range r.Removed {
		stage(name, nil, true, "withdrawing a removed server's tools")
	}
	for _, name := range slices.Sorted(maps.Keys(s.tools.byServer)) {
		stage(name, s.tools.byServer[name], false, "re-registering tools after a reload; keeping the previous names")
	}
	s.snap.Store(next)
	s.register(merge(regs))
	s.tools.mu.Unlock()

	s.catalog.mu.Lock()
	for _, name := range r.Removed {
		delete(s.catalog.resources, name)
		delete(s.catalog.templates, name)
		delete(s.catalog.prompts, name)
	}
	if s.catalog.resources != nil {
		s.registerCatalog()
	}
	s.catalog.mu.Unlock()

	s.mcp.SendNotificationToAllClients("notifications/tools/list_changed", nil)
	s.rootsChanged(ctx, cur.policy, r.Policy)
	s.writeAudit(ctx, audit.Event{Event: audit.KindToolsChanged, Detail: "config reloaded", PolicySHA256: r.Policy.SHA256()})
	s.logger.Info("config reloaded", "policy_sha256", r.Policy.SHA256(), "removed_servers", r.Removed)
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

// CheckNaming reports whether naming would give every tool now exposed a
// distinct, client-safe wire name, so that a reload can be refused whole
// instead of applied in part.
func (s *Server) CheckNaming(naming Naming) error {
	s.tools.mu.Lock()
	defer s.tools.mu.Unlock()
	_, err := naming.Names(s.tools.byServer)
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
