package rules

// Workspace returns what a server's paths are confined to, for answering
// the server's roots/list: the workspace directories of the global policy
// and of the server's policy (cleaned, global first, without repeats), and
// the server's root ("" if none). A profile's workspace and the client's
// roots (workspace_from_roots) are not included: they differ by caller,
// and the answer goes to a server shared by every caller. A nil policy
// has none.
func (p *Policy) Workspace(server string) (dirs []string, root string) {
	if p == nil {
		return nil, ""
	}
	seen := map[string]bool{}
	add := func(g *gate) {
		if g == nil {
			return
		}
		for _, d := range g.workspace {
			if !seen[d] {
				seen[d] = true
				dirs = append(dirs, d)
			}
		}
	}
	add(&p.global)
	srv := p.servers[server]
	add(srv.gate)
	return dirs, srv.root
}
