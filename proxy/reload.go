package proxy

import (
	"context"
	"maps"
	"slices"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/rules"
)

// settings are the parts of a Server's configuration a reload replaces
// whole, read without locking.
type settings struct {
	naming          Naming
	samplingDenied  map[string]bool // servers whose policy.sampling is deny
	resolveSymlinks map[string]bool // servers whose path arguments are also decided with symlinks followed
}

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

// Reload swaps in a new configuration. Calls in flight finish under the
// policy they started with; calls after it use the new one. Tools are
// re-registered under the new naming, clients are told the tool list
// changed (what is hidden may differ), and the new policy's hash is
// audited.
func (s *Server) Reload(ctx context.Context, r Reload) {
	s.policy.Store(r.Policy)

	s.tools.mu.Lock()
	s.settings.Store(&settings{naming: r.Naming, samplingDenied: r.SamplingDenied, resolveSymlinks: r.ResolveSymlinks})
	for _, name := range r.Removed {
		if _, _, _, err := s.rebuildTools(name, nil, true); err != nil {
			s.logger.Error("withdrawing a removed server's tools", "server", name, "err", err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.tools.byServer)) {
		if _, _, _, err := s.rebuildTools(name, s.tools.byServer[name], false); err != nil {
			s.logger.Error("re-registering tools after a reload; keeping the previous names", "server", name, "err", err)
		}
	}
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
	s.writeAudit(ctx, audit.Event{Event: audit.KindToolsChanged, Detail: "config reloaded", PolicySHA256: r.Policy.SHA256()})
	s.logger.Info("config reloaded", "policy_sha256", r.Policy.SHA256(), "removed_servers", r.Removed)
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
