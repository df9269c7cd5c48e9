package rules

import "slices"

// Workspace returns what a server's paths are confined to, for answering
// the server's roots/list: the workspace directories of the global policy
// and of the server's policy (cleaned, global first, without repeats), and
// the server's root ("" if none). A profile's workspace and the client's
// roots (workspace_from_roots) are not included: they differ by caller,
// and the answer goes to a server shared by every caller. The directories
// are computed once, at Compile; the caller must not modify them. A nil
// policy has none.
func (p *Policy) Workspace(server string) (dirs []string, root string) {
	if p == nil {
		return nil, ""
	}
	srv, ok := p.servers[server]
	if !ok {
		return p.global.workspace, ""
	}
	return srv.workspace, srv.root
}

// workspaceDirs joins the workspace directories of the global gate and a
// server's gate (nil for none), global first, without repeats.
func workspaceDirs(global, server *gate) []string {
	dirs := slices.Clone(global.workspace)
	if server != nil {
		for _, d := range server.workspace {
			if !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		}
	}
	return slices.Clip(dirs)
}
