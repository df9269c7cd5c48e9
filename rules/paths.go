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
