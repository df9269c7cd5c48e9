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
	x.collectPaths(c.Arguments, &paths, &known)
	slices.Sort(paths)
	return slices.Compact(paths), known
}

func (x *evalCtx) collectPaths(v any, out *[]string, known *bool) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if x.p.pathKeys[k] {
				x.pathStrings(e, out, known)
			}
			x.collectPaths(e, out, known)
		}
	case []any:
		for _, e := range t {
			x.collectPaths(e, out, known)
		}
	}
}

func (x *evalCtx) pathStrings(v any, out *[]string, known *bool) {
	switch t := v.(type) {
	case string:
		if p, ok := normalisePath(t, x.root); ok {
			*out = append(*out, p)
		} else {
			*known = false
		}
	case []any:
		for _, e := range t {
			x.pathStrings(e, out, known)
		}
	}
}

// Within reports whether the clean absolute path p is dir or beneath it:
// `/srv/app/x` is within `/srv/app`, `/srv/apple` is not.
func Within(p, dir string) bool { return within(p, dir) }
