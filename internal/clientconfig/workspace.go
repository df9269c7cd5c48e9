package clientconfig

import (
	"path/filepath"
	"slices"
	"strings"
)

// filesystemPackage names the reference filesystem server in a command or
// an argument (@modelcontextprotocol/server-filesystem, and forks named
// mcp-server-filesystem).
const filesystemPackage = "server-filesystem"

// OutsideWorkspace is the decision the generated config gives a path
// outside the workspace: a human is asked, so that confinement does not
// silently break a call the user meant.
const OutsideWorkspace = "ask"

// filesystemDirs returns the directories a filesystem server entry was
// given (its arguments after the package name that are not flags), made
// absolute: relative ones against the server's cwd, else against project;
// a leading ~ against home. nil for any other server, and for a
// filesystem server given no directory (one that takes its roots from the
// client).
func filesystemDirs(s server, project, home string) []string {
	at := -1
	if strings.Contains(s.command, filesystemPackage) {
		at = 0
	}
	for i, a := range s.args {
		if at < 0 && strings.Contains(a, filesystemPackage) {
			at = i + 1
		}
	}
	if at < 0 {
		return nil
	}
	base := s.cwd
	if !filepath.IsAbs(base) {
		base = filepath.Join(project, base)
	}
	var dirs []string
	for _, a := range s.args[at:] {
		switch {
		case a == "" || strings.HasPrefix(a, "-") || strings.Contains(a, "${"):
			continue
		case a == "~" || strings.HasPrefix(a, "~/"):
			if home == "" {
				continue
			}
			a = filepath.Join(home, a[1:])
		case !filepath.IsAbs(a):
			if !filepath.IsAbs(base) {
				continue // nothing known to resolve it against
			}
			a = filepath.Join(base, a)
		}
		if d := filepath.Clean(a); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// confine sets the workspace of every server that runs on this machine (a
// stdio command): a filesystem server's own directories, and for the
// others ws, the explicit workspace (Options.Workspace) if there is one,
// else the directories every filesystem server was given, else the
// project directory. A filesystem server without a cwd gets its first
// directory as cwd, where it resolves relative paths. Remote servers are not confined: their path
// arguments are paths on another machine (a file in a repository), which
// no local workspace could hold. It returns the workspace of the servers
// that are not filesystem servers.
func (c *converter) confine(servers []server) []string {
	ws := slices.Clone(c.opts.Workspace)
	own := make([][]string, len(servers))
	for i, s := range servers {
		if s.trans != "stdio" {
			continue
		}
		own[i] = filesystemDirs(s, c.opts.ProjectDir, c.opts.Home)
		if len(c.opts.Workspace) > 0 {
			continue
		}
		for _, d := range own[i] {
			if !slices.Contains(ws, d) {
				ws = append(ws, d)
			}
		}
	}
	if len(ws) == 0 && c.opts.ProjectDir != "" {
		ws = []string{filepath.Clean(c.opts.ProjectDir)}
	}
	for i := range servers {
		if servers[i].trans != "stdio" {
			continue
		}
		if len(own[i]) > 0 && servers[i].cwd == "" {
			// server-filesystem resolves a relative path against its
			// first directory; the rules join it to cwd, so they must agree.
			servers[i].cwd = own[i][0]
		}
		switch {
		case len(c.opts.Workspace) == 0 && len(own[i]) > 0:
			servers[i].workspace = own[i]
		case len(ws) > 0:
			servers[i].workspace = ws
		default:
			c.notef("servers.%s: not confined to a workspace (no project directory known): set its policy.workspace", servers[i].key)
		}
		for _, d := range servers[i].workspace {
			if filepath.Dir(d) == d {
				c.notef("servers.%s: its workspace %s is the whole filesystem, which confines nothing: narrow policy.workspace to the directories it needs", servers[i].key, d)
			}
		}
	}
	return ws
}
