package argschema

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpwarden/mcpwarden/internal/keyfold"
)

// A MismatchError is an argument whose JSON type is not a type its tool
// declares for it.
type MismatchError struct {
	// Path is where the argument is, as a rule key would name it with
	// indexes: `paths`, `options.paths[2]`; "" is the arguments as a whole.
	Path string
	// Got is the value's type as a message says it ("a string"); Want the
	// declared types ("an array or null").
	Got, Want string
	// Advice says what to send instead ("send a JSON array").
	Advice string
}

func (e *MismatchError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("the arguments are %s, but the tool declares %s; %s", e.Got, e.Want, e.Advice)
	}
	return fmt.Sprintf("argument %q is %s, but the tool declares %s; %s", e.Path, e.Got, e.Want, e.Advice)
}

// Check returns nil if every value in args is of a type the schema
// declares for it, else a *MismatchError for one that is not (the first in
// key order). args is as jsonargs.Parse returns it. It allocates nothing
// when the arguments fit.
func (s *Schema) Check(args map[string]any) error {
	if s == nil || s.root == nil || s.root.fits(args) {
		return nil
	}
	if e := s.root.explain(args, nil); e != nil {
		return e
	}
	return nil // cannot be: explain finds what fits refused
}

// fits reports whether v fits n.
func (n *node) fits(v any) bool {
	if !n.types.accepts(typeOf(v)) {
		return false
	}
	for _, a := range n.allOf {
		if !a.fits(v) {
			return false
		}
	}
	for _, group := range n.anyOf {
		if !anyFits(group, v) {
			return false
		}
	}
	switch v := v.(type) {
	case map[string]any:
		if n.props == nil && n.additional == nil {
			return true
		}
		for k, x := range v {
			if !n.memberFits(k, x) {
				return false
			}
		}
	case []any:
		if n.prefix == nil && n.items == nil {
			return true
		}
		for i, x := range v {
			if it := n.item(i); it != nil && !it.fits(x) {
				return false
			}
		}
	}
	return true
}

func anyFits(group []*node, v any) bool {
	for _, b := range group {
		if b.fits(v) {
			return true
		}
	}
	return false
}

// memberFits reports whether x, the value of key k in an object, fits
// every declared property k matches as a Go server binds keys (keyfold),
// or additionalProperties when it matches none.
func (n *node) memberFits(k string, x any) bool {
	if p, ok := n.props[k]; ok && !n.sharesFold(k) {
		return p.fits(x)
	}
	var buf [64]byte
	group, ok := n.folded[string(keyfold.AppendKey(buf[:0], k))]
	if !ok {
		return n.additional == nil || n.additional.fits(x)
	}
	for _, p := range group {
		if !p.fits(x) {
			return false
		}
	}
	return true
}

// sharesFold reports whether a declared name k folds together with
// another declared name (a schema declaring both `path` and `Path`).
func (n *node) sharesFold(k string) bool {
	return len(n.folded) != len(n.props) && len(n.folded[keyfold.Key(k)]) > 1
}

// members returns the declared properties key k matches, or nil.
func (n *node) members(k string) []*node {
	if p, ok := n.props[k]; ok && !n.sharesFold(k) {
		return []*node{p}
	}
	return n.folded[keyfold.Key(k)]
}

// item returns the schema of an array's i-th item, or nil for anything.
func (n *node) item(i int) *node {
	if i < len(n.prefix) {
		return n.prefix[i]
	}
	return n.items
}

// explain returns why v does not fit n, v being at path, or nil if it fits
// after all. It is fits again, on the way to a refusal: it may allocate.
func (n *node) explain(v any, path []string) *MismatchError {
	got := typeOf(v)
	if !n.types.accepts(got) {
		return mismatch(path, got, n.types)
	}
	for _, a := range n.allOf {
		if e := a.explain(v, path); e != nil {
			return e
		}
	}
	for _, group := range n.anyOf {
		if anyFits(group, v) {
			continue
		}
		var union typeSet
		for _, b := range group {
			bt := b.effective()
			union |= bt
			if bt.accepts(got) {
				if e := b.explain(v, path); e != nil {
					return e // the first branch of the value's type: why it does not fit
				}
			}
		}
		return mismatch(path, got, union)
	}
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			at := append(slices.Clip(path), "."+k)
			if len(path) == 0 {
				at[0] = k
			}
			group := n.members(k)
			if group == nil && n.additional != nil {
				group = []*node{n.additional}
			}
			for _, p := range group {
				if e := p.explain(v[k], at); e != nil {
					return e
				}
			}
		}
	case []any:
		for i, x := range v {
			if it := n.item(i); it != nil {
				if e := it.explain(x, append(slices.Clip(path), "["+strconv.Itoa(i)+"]")); e != nil {
					return e
				}
			}
		}
	}
	return nil
}

// effective is the types n admits at its own level, its allOf and anyOf
// included: what a message names as declared for an anyOf branch that is
// a $ref.
func (n *node) effective() typeSet {
	t := n.types
	for _, a := range n.allOf {
		t &= a.effective()
	}
	for _, group := range n.anyOf {
		var u typeSet
		for _, b := range group {
			u |= b.effective()
		}
		t &= u
	}
	return t
}

func mismatch(path []string, got, want typeSet) *MismatchError {
	gotText := got.describe()
	switch {
	case got == typeNumber && want&typeInteger != 0:
		gotText = "a number with a fraction"
	case got == typeInteger:
		gotText = "a number"
	}
	return &MismatchError{Path: strings.Join(path, ""), Got: gotText, Want: want.describe(), Advice: want.advice()}
}
