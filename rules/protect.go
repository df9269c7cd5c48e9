package rules

import (
	"path/filepath"
	"strings"
)

// RuleSelfProtection names the built-in rule that denies a call reaching
// mcpwarden's own files (Spec.Protected); GateBuiltin is where it is.
// GatePolicy is the global gate (a server's is "servers.<name>.policy", a
// profile's "profiles.<name>").
const (
	RuleSelfProtection = "builtin:self-protection"
	GateBuiltin        = "builtin"
	GatePolicy         = "policy"
)

// A protectedPath is one entry of Spec.Protected: a file or directory, or
// with prefix set every path starting with path.
type protectedPath struct {
	path   string
	prefix bool
}

// protected compiles Spec.Protected and Spec.ProtectedNames, case-folded
// when paths compare so; a relative entry of Protected is an error, since
// it could not protect anything, and so is an absolute name, or one that
// is empty or climbs with `..`.
func (c *compiler) protected(paths, names []string) {
	fold := func(s string) string {
		if c.p.foldPaths {
			return foldCase(s)
		}
		return s
	}
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
		c.p.own.paths = append(c.p.own.paths, protectedPath{path: fold(clean), prefix: prefix})
	}
	for i, n := range names {
		clean := filepath.ToSlash(filepath.Clean(n))
		if n == "" || filepath.IsAbs(n) || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
			c.errorf("protected_names[%d]: %q is not a relative path under a directory; write it as .mcp.json or .claude/settings.json", i, n)
			continue
		}
		c.p.own.names = append(c.p.own.names, "/"+fold(clean))
	}
}

// IsPathKey reports whether values under the argument key are path-like
// (Spec.PathKeys), comparing under Unicode case folding as a Go server
// reads keys (`PATH`, `ſource` are path-like). A nil Policy has none.
func (p *Policy) IsPathKey(key string) bool {
	if p == nil {
		return false
	}
	return p.pathKeys.has(key)
}

// IsURLKey reports whether values under the argument key are URLs
// (Spec.URLKeys), under the same folding as IsPathKey.
func (p *Policy) IsURLKey(key string) bool { return p != nil && p.urlKeys.has(key) }

// IsCommandKey reports whether values under the argument key are shell
// commands (Spec.CommandKeys), under the same folding as IsPathKey.
func (p *Policy) IsCommandKey(key string) bool { return p != nil && p.cmdKeys.has(key) }

// IsLocal reports whether server is on this machine (ServerSpec.Local).
func (p *Policy) IsLocal(server string) bool {
	return p != nil && p.servers[server].local
}

// SelfProtection is the built-in self-protection alone: a Deny verdict by
// RuleSelfProtection and true when a path-like value of c, a call to a
// local server, is at or under one of mcpwarden's own files in any of its
// forms (c.Physical included).
func (p *Policy) SelfProtection(c Call) (Verdict, bool) {
	if p == nil {
		return Verdict{}, false
	}
	srv := p.servers[c.Server]
	x := p.evalCtx(&c, srv)
	return x.selfProtection(srv)
}

// selfProtection denies a call to a local server any of whose path-like
// values reaches a protected path in any form the upstream may read it in
// (pathEnv.forms: lexical, NFC, file: URI, `~`, physical), or, when its
// location cannot be known, in any guess — including a `~` path or a
// relative one whose tail names a protected path under any home or working
// directory. No gate can override it.
func (x *evalCtx) selfProtection(srv serverEntry) (Verdict, bool) {
	if !srv.local || len(x.p.own.paths)+len(x.p.own.names) == 0 {
		return Verdict{}, false
	}
	hit, entry, holder, n := "", "", "", 0
	x.eachPath(x.args, func(v any) bool {
		s, ok := v.(string)
		if !ok {
			return false
		}
		n++
		if e, ok := x.reaches(s); ok {
			hit, entry = s, e
			return true
		}
		if holder == "" {
			x.env.forms(s, func(form string, known bool) bool {
				if known && x.p.own.holds(x.env.foldPath(form)) || !known && x.p.own.holdsTail(x.env.foldPath(form)) {
					holder = s
					return true
				}
				return false
			})
		}
		return false
	})
	switch {
	case hit != "" && strings.HasPrefix(entry, "**/"):
		return selfProtection("path " + quote(hit) + " may be a client config (" + entry + ") that routes clients through mcpwarden, which no config can open"), true
	case hit != "":
		return selfProtection("path " + quote(hit) + " is one of mcpwarden's own files, which no config can open"), true
	case holder != "" && n > 1:
		// A call with a source and a destination (move, copy, rename)
		// whose one path is a directory holding mcpwarden's files would
		// carry them out of their protected place.
		return selfProtection("path " + quote(holder) + " holds mcpwarden's own files, which no config lets a call move or copy"), true
	}
	return Verdict{}, false
}

// selfProtection is the built-in rule's deny, for reason.
func selfProtection(reason string) Verdict {
	return Verdict{Decision: Deny, Rule: RuleSelfProtection, Gate: GateBuiltin, Reason: reason}
}

// reaches returns the protected path (or `**/` and a protected name) any
// form of the path-like value s is at or under; a value with a form whose
// location is unknown is also tried as a tail under any directory (`~/x`,
// `~user/x`, a relative `x`).
func (x *evalCtx) reaches(s string) (string, bool) {
	unknown, entry := false, ""
	found := x.env.forms(s, func(form string, known bool) bool {
		unknown = unknown || !known
		var ok bool
		entry, ok = x.p.own.at(x.env.foldPath(form))
		return ok
	})
	if found || !unknown {
		return entry, found
	}
	tail := s
	if strings.HasPrefix(s, "~") {
		_, tail, _ = strings.Cut(s, "/")
	}
	if e, ok := x.p.own.tail(x.env.foldPath(tail)); ok {
		return e, true
	}
	// A relative guess (the tail after `/proc/self/cwd/`, `/dev/fd/3/`)
	// is under a directory that cannot be known.
	found = x.env.forms(s, func(form string, known bool) bool {
		if known || filepath.IsAbs(form) {
			return false
		}
		var ok bool
		entry, ok = x.p.own.tail(x.env.foldPath(form))
		return ok
	})
	return entry, found
}

// An ownFiles is what self-protection keeps a local server from:
// mcpwarden's own files by path and, wherever they are, by name.
type ownFiles struct {
	paths []protectedPath // see Spec.Protected
	names []string        // see Spec.ProtectedNames: "/.mcp.json"
}

// at returns the protected path (or name) the clean absolute path
// abs is at or under.
func (o *ownFiles) at(abs string) (string, bool) {
	for _, pp := range o.paths {
		if pp.prefix && strings.HasPrefix(abs, pp.path) || !pp.prefix && within(abs, pp.path) {
			return pp.path, true
		}
	}
	for _, n := range o.names {
		if holdsName(abs, n) {
			return "**" + n, true
		}
	}
	return "", false
}

// holdsName reports whether the path p has the protected name n
// ("/.claude/settings.json") as a run of its components: at its end or
// followed by `/`. It does not allocate.
func holdsName(p, n string) bool {
	for i := 0; i < len(p); {
		j := strings.Index(p[i:], n)
		if j < 0 {
			return false
		}
		end := i + j + len(n)
		if end == len(p) || p[end] == '/' {
			return true
		}
		i += j + 1
	}
	return false
}

// holds reports whether the clean absolute path abs is a
// directory above a protected path.
func (o *ownFiles) holds(abs string) bool {
	for _, pp := range o.paths {
		dir := pp.path
		if pp.prefix {
			dir = filepath.Dir(dir)
		}
		if dir != abs && within(dir, abs) {
			return true
		}
	}
	for _, n := range o.names {
		// `.claude` holds `.claude/settings.json` wherever it is.
		for i := strings.LastIndexByte(n, '/'); i > 0; i = strings.LastIndexByte(n[:i], '/') {
			if strings.HasSuffix(abs, n[:i]) {
				return true
			}
		}
	}
	return false
}

// holdsTail reports whether a guess at a path whose location is unknown
// may be a directory above a protected path: an absolute guess that is,
// or a relative one (leading `..` dropped) whose components are a run of
// a protected path's directories, or that ends with a directory a
// protected name starts with (`x/.claude`).
func (o *ownFiles) holdsTail(guess string) bool {
	if filepath.IsAbs(guess) {
		return o.holds(filepath.Clean(guess))
	}
	rel := strings.TrimLeft(filepath.ToSlash(filepath.Clean("/"+guess)), "/")
	for strings.HasPrefix(rel, "../") || rel == ".." {
		rel = strings.TrimPrefix(strings.TrimPrefix(rel, ".."), "/")
	}
	if rel == "" {
		return false
	}
	for _, pp := range o.paths {
		if strings.Contains(filepath.Dir(pp.path)+"/", "/"+rel+"/") {
			return true
		}
	}
	return o.holds("/" + rel)
}

// tail reports whether a relative path rel, under an unknown
// directory D, could be at or under a protected path P: when P ends with
// one of rel's leading runs of components (so D/rel is P or beneath it for
// D = P minus that run); or at or under a protected name N: when a leading
// run holds N whole or N ends with it. Leading `..` components, which
// could lead anywhere, are dropped first.
func (o *ownFiles) tail(rel string) (string, bool) {
	parts := strings.Split(filepath.ToSlash(filepath.Clean("/" + rel))[1:], "/")
	for len(parts) > 0 && (parts[0] == ".." || parts[0] == "") {
		parts = parts[1:]
	}
	for n := 1; n <= len(parts); n++ {
		run := "/" + strings.Join(parts[:n], "/")
		for _, pp := range o.paths {
			if pp.prefix && strings.Contains(run+"/", pp.path[strings.LastIndexByte(pp.path, '/'):]) || !pp.prefix && strings.HasSuffix(pp.path, run) {
				return pp.path, true
			}
		}
		for _, n := range o.names {
			// D/rel holds the name whole, or D ends with its start.
			if holdsName(run, n) || strings.HasSuffix(n, run) {
				return "**" + n, true
			}
		}
	}
	return "", false
}
