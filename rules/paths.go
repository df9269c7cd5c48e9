package rules

import (
	"slices"
	"strings"
)

// A PathForm is one path-like value of a call with every form in which the
// upstream may read it (see the package documentation).
type PathForm struct {
	// Value is the value as written.
	Value string
	// Raw are its known readings, absolute and joined to each of the
	// server's roots (or home, or decoded from a `file:` URI) but not
	// cleaned: what the kernel would walk; and its readings in the
	// server's view (`/proc/self/cwd/x`, `/dev/fd/3`), which are not
	// known, with where they lead under the server's root (`<root>/x`);
	// sorted and without repeats. The proxy resolves each on disk,
	// those in the server's view as the server process would, and hands
	// the results back in Call.Physical.
	Raw []string
	// Forms are its known forms, sorted and without repeats: lexical
	// (cleaned), NFC, and physical when Call.Physical has one.
	Forms []string
	// Known is false when some reading's location cannot be known (a
	// relative path without a root, `~` without a home, a URI other than
	// `file:`); such a value never satisfies an allow.
	Known bool
}

// PathForms returns every path-like value of c (the values `@path` reads:
// under path-like keys at any depth, and `file:` URIs under URL-like keys)
// with its forms, in the order of their values. known is false when any
// value's location cannot be known, or a path-like key holds something
// other than a string. A nil Policy knows no paths.
func (p *Policy) PathForms(c Call) (forms []PathForm, known bool) {
	if p == nil {
		return nil, false
	}
	x := p.evalCtx(&c, p.servers[c.Server])
	known = true
	x.eachPath(c.Arguments, func(v any) bool {
		s, ok := v.(string)
		if !ok {
			known = false
			return false
		}
		f := PathForm{Value: s, Known: true}
		x.env.readings(s, func(raw string, k bool) bool {
			if k || isView(raw) {
				f.Raw = append(f.Raw, raw)
				f.Raw = append(f.Raw, x.env.viewPlaces(raw)...)
			}
			f.Known = f.Known && k
			return false
		})
		x.env.forms(s, func(form string, k bool) bool {
			if k {
				f.Forms = append(f.Forms, form)
			}
			return false
		})
		slices.Sort(f.Raw)
		f.Raw = slices.Compact(f.Raw)
		slices.Sort(f.Forms)
		f.Forms = slices.Compact(f.Forms)
		known = known && f.Known
		forms = append(forms, f)
		return false
	})
	slices.SortFunc(forms, func(a, b PathForm) int { return strings.Compare(a.Value, b.Value) })
	return forms, known
}

// Paths returns every known form of every path-like value of c (see
// PathForms), sorted and without repeats; known is false when any value's
// location cannot be known. The ask resolver then scopes nothing to paths.
func (p *Policy) Paths(c Call) (paths []string, known bool) {
	forms, known := p.PathForms(c)
	for _, f := range forms {
		paths = append(paths, f.Forms...)
	}
	slices.Sort(paths)
	return slices.Compact(paths), known
}

// Within reports whether the clean absolute path p is dir or beneath it:
// `/srv/app/x` is within `/srv/app`, `/srv/apple` is not. It compares case
// exactly; see WithinFold.
func Within(p, dir string) bool { return within(p, dir) }

// WithinFold is Within under the policy's case rule: case-folded when
// Spec.PathsCaseInsensitive is set. A nil Policy compares exactly.
func (p *Policy) WithinFold(path, dir string) bool {
	if p == nil || !p.foldPaths {
		return within(path, dir)
	}
	return within(foldCase(path), foldCase(dir))
}
