package rules

import (
	"net/url"
	"path/filepath"
	"strings"
)

// RuleSelfProtection names the built-in rule that denies a call reaching
// mcpwarden's own files (Spec.Protected); GateBuiltin is where it is.
const (
	RuleSelfProtection = "builtin:self-protection"
	GateBuiltin        = "builtin"
)

// A protectedPath is one entry of Spec.Protected: a file or directory, or
// with prefix set every path starting with path.
type protectedPath struct {
	path   string
	prefix bool
}

// protected compiles Spec.Protected; a relative entry is an error, since
// it could not protect anything.
func (c *compiler) protected(paths []string) {
	for i, p := range paths {
		prefix := strings.HasSuffix(p, "*")
		p = strings.TrimSuffix(p, "*")
		if !filepath.IsAbs(p) {
			c.errorf("protected[%d]: %q is not absolute", i, paths[i])
			continue
		}
		clean := filepath.Clean(p)
		if prefix && strings.HasSuffix(p, "/") {
			clean += "/"
		}
		c.p.protected = append(c.p.protected, protectedPath{path: clean, prefix: prefix})
	}
}

// IsPathKey reports whether values under the argument key are path-like
// (Spec.PathKeys), comparing under Unicode case folding as a Go server
// reads keys (`PATH`, `ſource` are path-like). A nil Policy has none.
func (p *Policy) IsPathKey(key string) bool {
	if p == nil {
		return false
	}
	if p.pathKeys[key] {
		return true
	}
	for k := range p.pathKeys {
		if strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}

// IsLocal reports whether server is on this machine (ServerSpec.Local).
func (p *Policy) IsLocal(server string) bool {
	return p != nil && p.servers[server].local
}

// SelfProtection is the built-in self-protection alone: a Deny verdict by
// RuleSelfProtection and true when a path-like value of c, a call to a
// local server, is at or under one of mcpwarden's own files. The proxy
// uses it on the call's paths as they resolve on disk.
func (p *Policy) SelfProtection(c Call) (Verdict, bool) {
	if p == nil {
		return Verdict{}, false
	}
	srv := p.servers[c.Server]
	x := evalCtx{p: p, server: c.Server, tool: c.Tool, args: c.Arguments, root: srv.root}
	return x.selfProtection(srv)
}

// selfProtection denies a call to a local server any of whose path-like
// values reaches a protected path in any form: the value normalised (joined
// to the root, cleaned), or, when its location cannot be known, every guess
// — cleaned as is, rooted at `/`, a file:// URI decoded, and a `~` path or
// a relative one whose tail names a protected path under any home or
// working directory. No gate can override it.
func (x *evalCtx) selfProtection(srv serverEntry) (Verdict, bool) {
	if !srv.local || len(x.p.protected) == 0 {
		return Verdict{}, false
	}
	hit, found, n := "", false, 0
	holder := ""
	x.eachPath(x.args, func(s string) {
		n++
		if !found {
			_, found = x.p.reaches(s, x.root)
			hit = s
		}
		if abs, ok := normalisePath(s, x.root); ok && holder == "" && x.p.holdsProtected(abs) {
			holder = s
		}
	})
	switch {
	case found:
		return Verdict{
			Decision: Deny,
			Rule:     RuleSelfProtection,
			Gate:     GateBuiltin,
			Reason:   "path " + quote(hit) + " is one of mcpwarden's own files, which no config can open",
		}, true
	case holder != "" && n > 1:
		// A call with a source and a destination (move, copy, rename)
		// whose one path is a directory holding mcpwarden's files would
		// carry them out of their protected place.
		return Verdict{
			Decision: Deny,
			Rule:     RuleSelfProtection,
			Gate:     GateBuiltin,
			Reason:   "path " + quote(holder) + " holds mcpwarden's own files, which no config lets a call move or copy",
		}, true
	}
	return Verdict{}, false
}

// reaches returns the protected path value s is at or under, in any of its
// readings.
func (p *Policy) reaches(s, root string) (string, bool) {
	if len(s) > 5 && strings.EqualFold(s[:5], "file:") { // a server may read it as a URI
		if u, err := url.PathUnescape(s[5:]); err == nil {
			if rest, ok := strings.CutPrefix(u, "//"); ok { // file://host/path
				u = rest[strings.IndexByte(rest, '/')+1:]
			}
			if pp, ok := p.protectedAt(filepath.Join("/", u)); ok {
				return pp, true
			}
		}
	}
	if abs, ok := normalisePath(s, root); ok {
		return p.protectedAt(abs)
	}
	rel, rooted := guessPaths(s)
	for _, g := range []string{rel, rooted} {
		if pp, ok := p.protectedAt(g); ok {
			return pp, true
		}
	}
	// `~/x`, `~user/x` or a relative `x`: under some unknown directory.
	tail := s
	if strings.HasPrefix(s, "~") {
		_, tail, _ = strings.Cut(s, "/")
	}
	return p.protectedTail(tail)
}

// protectedAt returns the protected path the clean absolute path abs is at
// or under.
func (p *Policy) protectedAt(abs string) (string, bool) {
	for _, pp := range p.protected {
		if pp.prefix && strings.HasPrefix(abs, pp.path) || !pp.prefix && within(abs, pp.path) {
			return pp.path, true
		}
	}
	return "", false
}

// holdsProtected reports whether the clean absolute path abs is a
// directory above a protected path.
func (p *Policy) holdsProtected(abs string) bool {
	for _, pp := range p.protected {
		dir := pp.path
		if pp.prefix {
			dir = filepath.Dir(dir)
		}
		if dir != abs && within(dir, abs) {
			return true
		}
	}
	return false
}

// protectedTail reports whether a relative path rel, under an unknown
// directory D, could be at or under a protected path P: when P ends with
// one of rel's leading runs of components (so D/rel is P or beneath it for
// D = P minus that run). Leading `..` components, which could lead
// anywhere, are dropped first.
func (p *Policy) protectedTail(rel string) (string, bool) {
	parts := strings.Split(filepath.ToSlash(filepath.Clean("/" + rel))[1:], "/")
	for len(parts) > 0 && (parts[0] == ".." || parts[0] == "") {
		parts = parts[1:]
	}
	for n := 1; n <= len(parts); n++ {
		run := "/" + strings.Join(parts[:n], "/")
		for _, pp := range p.protected {
			if pp.prefix && strings.Contains(run+"/", pp.path[strings.LastIndexByte(pp.path, '/'):]) || !pp.prefix && strings.HasSuffix(pp.path, run) {
				return pp.path, true
			}
		}
	}
	return "", false
}
