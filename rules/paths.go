package rules

import "slices"

// Paths returns the values under path-like keys anywhere in c's arguments
// (nested objects and arrays included), normalised as the rules see them:
// absolute and clean, relative ones joined to the server's root. The result
// is sorted and without repeats. known is false when any value's location
// cannot be known (a relative path without a root, `~`, a URI); the ask
// resolver then scopes nothing to paths. A nil Policy knows no paths.
func (p *Policy) Paths(c Call) (paths []string, known bool) {
	if p == nil {
		return nil, false
	}
	x := evalCtx{p: p, args: c.Arguments, root: p.servers[c.Server].root}
	known = true
	x.eachPath(c.Arguments, func(s string) {
		if p, ok := normalisePath(s, x.root); ok {
			paths = append(paths, p)
		} else {
			known = false
		}
	})
	slices.Sort(paths)
	return slices.Compact(paths), known
}

// Within reports whether the clean absolute path p is dir or beneath it:
// `/srv/app/x` is within `/srv/app`, `/srv/apple` is not.
func Within(p, dir string) bool { return within(p, dir) }

// WithPaths returns a copy of c whose path-like values (those Paths finds)
// are replaced by resolve(normalised value); values whose location is
// unknown are kept. It lets the proxy decide a call also as its paths
// resolve on disk (symlinks followed) without the rules doing any I/O.
// changed reports whether any value differs.
func (p *Policy) WithPaths(c Call, resolve func(string) string) (out Call, changed bool) {
	if p == nil {
		return c, false
	}
	x := evalCtx{p: p, root: p.servers[c.Server].root}
	out = c
	args, _ := x.mapPaths(c.Arguments, false, resolve, &changed).(map[string]any)
	if changed {
		out.Arguments = args
	}
	return out, changed
}

// mapPaths copies v, replacing the strings of path-like values (inPath).
func (x *evalCtx) mapPaths(v any, inPath bool, resolve func(string) string, changed *bool) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			if x.p.pathKeys.has(k) {
				m[k] = x.mapPaths(e, true, resolve, changed)
			} else {
				m[k] = x.mapPaths(e, false, resolve, changed)
			}
		}
		return m
	case []any:
		a := make([]any, len(t))
		for i, e := range t {
			a[i] = x.mapPaths(e, inPath, resolve, changed)
		}
		return a
	case string:
		if !inPath {
			return t
		}
		norm, ok := normalisePath(t, x.root)
		if !ok {
			return t
		}
		if r := resolve(norm); r != norm {
			*changed = true
			return r
		}
		return t
	default:
		return v
	}
}
