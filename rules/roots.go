package rules

// UsesRoots reports whether any gate takes the calling client's MCP roots
// as workspace (workspace_from_roots), so that the proxy asks clients for
// their roots only when they count.
func (p *Policy) UsesRoots() bool {
	if p == nil {
		return false
	}
	for _, g := range p.order {
		if g.fromRoots {
			return true
		}
	}
	return false
}
