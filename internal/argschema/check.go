package argschema

import (
	"errors"
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

// ErrTooComplex is Check's error for arguments whose check would take more
// than MaxSteps steps: a schema whose anyOf branches nest inside each other
// can make a check of deep arguments take exponential time, so the check
// stops, and the arguments are refused rather than let through unchecked.
var ErrTooComplex = errors.New("the arguments are too large or the tool's inputSchema branches too much to check them; send fewer or shallower values")

// MaxSteps bounds the schema nodes one Check visits (each value is visited
// once per schema that applies to it).
const MaxSteps = 1 << 22

// Check returns nil if every value in args is of a type the schema
// declares for it, else a *MismatchError for one that is not (the first in
// key order), or ErrTooComplex. args is as jsonargs.Parse returns it. It
// allocates nothing when the arguments fit.
func (s *Schema) Check(args map[string]any) error {
	if s == nil || s.root == nil {
		return nil
	}
	w := walk{left: MaxSteps}
	if w.fits(s.root, args) {
		return nil
	}
	if w.left < 0 {
		return ErrTooComplex
	}
	w.left = MaxSteps
	e := w.explain(s.root, args, nil)
	switch {
	case w.left < 0:
		return ErrTooComplex
	case e != nil:
		return e
	}
	return nil // cannot be: explain finds what fits refused
}

// A walk is one Check: the steps it has left.
type walk struct{ left int }

// fits reports whether v fits n; false once the walk has no steps left.
func (w *walk) fits(n *node, v any) bool {
	if w.left--; w.left < 0 || !n.types.accepts(typeOf(v)) {
		return false
	}
	for _, a := range n.allOf {
		if !w.fits(a, v) {
			return false
		}
	}
	for _, group := range n.anyOf {
		if !w.anyFits(group, v) {
			return false
		}
	}
	switch v := v.(type) {
	case map[string]any:
		if n.props == nil && n.additional == nil {
			return true
		}
		for k, x := range v {
			if !w.memberFits(n, k, x) {
				return false
			}
		}
	case []any:
		if n.prefix == nil && n.items == nil {
			return true
		}
		for i, x := range v {
			if it := n.item(i); it != nil && !w.fits(it, x) {
				return false
			}
		}
	}
	return true
}

func (w *walk) anyFits(group []*node, v any) bool {
	for _, b := range group {
		if w.fits(b, v) {
			return true
		}
	}
	return false
}

// memberFits reports whether x, the value of key k in an object, fits
// every declared property k matches as a Go server binds keys (keyfold),
// or additionalProperties when it matches none.
func (w *walk) memberFits(n *node, k string, x any) bool {
	if p, ok := n.props[k]; ok && !n.sharesFold(k) {
		return w.fits(p, x)
	}
	var buf [64]byte
	group, ok := n.folded[string(keyfold.AppendKey(buf[:0], k))]
	if !ok {
		return n.additional == nil || w.fits(n.additional, x)
	}
	for _, p := range group {
		if !w.fits(p, x) {
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
// after all (or the walk ran out of steps). It is fits again, on the way to
// a refusal: it may allocate.
func (w *walk) explain(n *node, v any, path []string) *MismatchError {
	if w.left--; w.left < 0 {
		return nil
	}
	got := typeOf(v)
	if !n.types.accepts(got) {
		return mismatch(path, got, n.types)
	}
	for _, a := range n.allOf {
		if e := w.explain(a, v, path); e != nil {
			return e
		}
	}
	for _, group := range n.anyOf {
		if w.anyFits(group, v) {
			continue
		}
		var union typeSet
		for _, b := range group {
			bt := w.effective(b)
			union |= bt
			if bt.accepts(got) {
				if e := w.explain(b, v, path); e != nil {
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
				if e := w.explain(p, v[k], at); e != nil {
					return e
				}
			}
		}
	case []any:
		for i, x := range v {
			if it := n.item(i); it != nil {
				if e := w.explain(it, x, append(slices.Clip(path), "["+strconv.Itoa(i)+"]")); e != nil {
					return e
				}
			}
		}
	}
	return nil
}

// effective is the types n admits at its own level, its allOf and anyOf
// included: what a message names as declared for an anyOf branch that is
// a $ref. It takes steps from the walk too: branches that share branches
// are many ways down.
func (w *walk) effective(n *node) typeSet {
	if w.left--; w.left < 0 {
		return anyType
	}
	t := n.types
	for _, a := range n.allOf {
		t &= w.effective(a)
	}
	for _, group := range n.anyOf {
		var u typeSet
		for _, b := range group {
			u |= w.effective(b)
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
