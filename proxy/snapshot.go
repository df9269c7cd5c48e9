package proxy

import (
	"github.com/mcpwarden/mcpwarden/proxy/naming"
	"github.com/mcpwarden/mcpwarden/rules"
)

// A snapshot is everything a reload or a change of an upstream's tools
// replaces: the policy, the naming, the wire-name map built under it and
// the per-server options. It is never modified; a change builds a new one
// and swaps it in whole, so that a request, which loads it once, never
// sees the new policy with the old options or the old names.
type snapshot struct {
	policy  *rules.Policy
	naming  naming.Scheme
	names   *naming.Names
	servers map[string]ServerOptions
}

// withNames returns a copy of s with names in place of its own.
func (s *snapshot) withNames(names *naming.Names) *snapshot {
	next := *s
	next.names = names
	return &next
}
