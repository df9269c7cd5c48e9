package upstream

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpwarden/mcpwarden/internal/sandbox"
)

// A Sandbox starts a stdio server confined by the kernel, through
// mcpwarden's hidden launcher (see package sandbox).
type Sandbox struct {
	// Launcher is the program that runs the launcher: mcpwarden itself.
	Launcher string
	// Policy is what the server may do. Its Home and TmpDir are created
	// (mode 0700) before each start; Spec.Env becomes its Env, and the
	// installation of the script an interpreter runs, or a package
	// runner's caches in Home, are added to its Exec.
	Policy sandbox.Policy
	// Protected are mcpwarden's own files, which no grant should reach
	// (see command). A path ending in "*" stands for the files it begins.
	Protected []string
	// ProtectedWrite are the files no server may write (self-protection's
	// whole list: the binary, client configs, …), which a server may still
	// read or run where its installation or the system holds them.
	ProtectedWrite []string
	// ProtectedNames are files, relative to any directory, that no server
	// may write (a project's client configs): those at the top of a
	// writable grant are bound read-only with ProtectedWrite's.
	ProtectedNames []string
}

// Interpreters whose first argument that is a file is the server's
// script, and package runners whose caches live in HOME.
var (
	interpreters   = []string{"node", "nodejs", "python", "python3", "deno", "bun"}
	packageRunners = map[string][]string{
		"npx":  {".npm"},
		"uvx":  {".cache/uv", ".local/share/uv"},
		"uv":   {".cache/uv", ".local/share/uv"},
		"pnpm": {".local/share/pnpm", ".cache/pnpm"},
		"bunx": {".bun"},
	}
)

// command is the sandboxed command of spec, and the files self-protection
// guards that its grants reach anyway: a workspace, argument or
// installation directory that holds mcpwarden's config (a config kept in
// the project a filesystem server serves, say). Tier namespaces masks
// those of Protected in the server's mount namespace; Landlock only adds
// rights, so tier landlock cannot carve them out and refuses to start
// unless sandbox.require is false. Tier namespaces also binds read-only
// those of ProtectedWrite a writable grant holds, and the ProtectedNames
// at the top of one. The log and the upstream audit event name each one,
// with what to move.
func (sb *Sandbox) command(ctx context.Context, spec Spec) (*sandbox.Cmd, []string, error) {
	p := sb.Policy
	p.Exec = slices.Clone(p.Exec)
	for _, d := range []string{p.Home, p.TmpDir} {
		if d == "" {
			continue
		}
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, nil, fmt.Errorf("sandbox: creating the server's private directory: %w", err)
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return nil, nil, fmt.Errorf("sandbox: making the server's private directory private: %w", err)
		}
	}
	p.Env = slices.Clone(p.Env)
	for _, k := range slices.Sorted(maps.Keys(spec.Env)) {
		p.Env = append(p.Env, k+"="+spec.Env[k])
	}
	base := filepath.Base(spec.Command)
	if slices.Contains(interpreters, base) || strings.HasPrefix(base, "python3.") {
		if root := scriptRoot(spec.Args, spec.Dir); root != "" {
			p.Exec = append(p.Exec, root)
		}
	}
	if caches, ok := packageRunners[base]; ok && p.Home != "" {
		// The runner executes what it downloads into its cache (a
		// package's binaries, uv's Python): the one writable place
		// that is also executable, and only for a package runner.
		for _, c := range caches {
			dir := filepath.Join(p.Home, c)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, nil, fmt.Errorf("sandbox: creating the package cache %s: %w", dir, err)
			}
			p.Exec = append(p.Exec, dir)
		}
	}
	argv := append([]string{spec.Command}, spec.Args...)
	if strings.Contains(spec.Command, "/") && !filepath.IsAbs(spec.Command) {
		// A relative command with a slash is relative to the server's dir.
		argv[0] = filepath.Join(spec.Dir, spec.Command)
	}
	cmd, err := sandbox.Command(ctx, sb.Launcher, p, argv)
	if err != nil {
		return nil, nil, err
	}
	var exposed, hide []string
	for _, g := range cmd.Grants() {
		for _, own := range reachesOwn(g, sb.Protected) {
			exposed = append(exposed, own+" (through "+g+")")
			for _, f := range ownPaths(own) {
				if !slices.Contains(hide, f) {
					hide = append(hide, f)
				}
			}
		}
	}
	// Tier namespaces masks them; tier landlock reports the mask missing.
	cmd.Hide(hide...)
	var readOnly []string
	for _, g := range p.Write {
		own := reachesOwn(g, sb.ProtectedWrite)
		for _, name := range sb.ProtectedNames {
			if f := filepath.Join(g, name); ownPaths(f) != nil {
				own = append(own, f)
			}
		}
		for _, o := range own {
			if !slices.Contains(exposed, o+" (through "+g+")") {
				exposed = append(exposed, o+" (through "+g+")")
			}
			for _, f := range ownPaths(o) {
				if !slices.Contains(hide, f) && !slices.Contains(readOnly, f) {
					readOnly = append(readOnly, f)
				}
			}
		}
	}
	// Tier namespaces binds them read-only; tier landlock cannot.
	cmd.ReadOnly(readOnly...)
	return cmd, exposed, nil
}

// reachesOwn returns those of own at or under dir.
func reachesOwn(dir string, own []string) []string {
	dir = filepath.Clean(dir)
	var out []string
	for _, o := range own {
		f := strings.TrimSuffix(o, "*")
		if f != o {
			f = filepath.Dir(f + "x")
		}
		if f == dir || dir == "/" || strings.HasPrefix(f, dir+string(filepath.Separator)) {
			out = append(out, o)
		}
	}
	return out
}

// ownPaths are the files that exist of one of mcpwarden's own, which
// may end in "*" (the audit log's rotations).
func ownPaths(own string) []string {
	if strings.HasSuffix(own, "*") {
		m, _ := filepath.Glob(own)
		return m
	}
	if _, err := os.Stat(own); err != nil {
		return nil
	}
	return []string{own}
}

// scriptRoot is the installation of the script an interpreter runs: the
// first argument that names a file (relative to dir), its symlinks
// followed, and from it the project that installed it: the directory
// above the outermost node_modules or site-packages on its path, else the
// nearest ancestor holding a package.json, pyproject.toml, node_modules or
// deno.json, else the script's own directory. "" when no argument is a
// file.
func scriptRoot(args []string, dir string) string {
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		path := a
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(real); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		return packageRoot(filepath.Dir(real))
	}
	return ""
}

// packageRoot is scriptRoot's rule for the script's directory d.
func packageRoot(d string) string {
	parts := strings.Split(d, string(filepath.Separator))
	for i, part := range parts {
		if (part == "node_modules" || part == "site-packages") && i > 1 {
			return strings.Join(parts[:i], string(filepath.Separator))
		}
	}
	for cur := d; ; {
		for _, marker := range []string{"package.json", "pyproject.toml", "node_modules", "deno.json"} {
			if _, err := os.Stat(filepath.Join(cur, marker)); err == nil {
				return cur
			}
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return d
		}
		cur = parent
	}
}
