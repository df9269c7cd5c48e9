package config

import (
	"cmp"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/spelling"
)

// keyTree is the shape of the config's keys, read from the koanf tags of
// Config: a node per key, children for a struct's fields, one wildcard
// child for a map's keys, none for a value (a slice, a duration, a scalar).
type keyTree struct {
	typ      reflect.Type // the value's Go type, pointers taken off
	children map[string]*keyTree
	any      *keyTree // a map's members, under any key
}

var durationType = reflect.TypeFor[time.Duration]()

// newKeyTree reads the keys of t.
func newKeyTree(t reflect.Type) *keyTree {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	n := &keyTree{typ: t}
	switch {
	case t == durationType:
	case t.Kind() == reflect.Map:
		n.any = newKeyTree(t.Elem())
	case t.Kind() == reflect.Struct:
		n.children = map[string]*keyTree{}
		n.addFields(t)
	}
	return n
}

func (n *keyTree) addFields(t reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("koanf")
		name, opts, _ := strings.Cut(tag, ",")
		switch {
		case tag == "-" || !f.IsExported():
		case opts == "squash":
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			n.addFields(ft)
		case name != "":
			n.children[name] = newKeyTree(f.Type)
		}
	}
}

// configKeys is the key tree of Config.
var configKeys = newKeyTree(reflect.TypeFor[Config]())

// lookup reports whether path is a key of the tree; if not, at is the
// number of its leading segments that are, and suggest the known key at
// that level closest in spelling to the next segment ("" = none close).
func (n *keyTree) lookup(path []string) (ok bool, at int, suggest string) {
	for i, seg := range path {
		next := n.child(seg)
		if next == nil {
			return false, i, n.closest(seg)
		}
		n = next
	}
	return true, len(path), ""
}

// at is the node of path, nil if path is no key.
func (n *keyTree) at(path []string) *keyTree {
	for _, seg := range path {
		if n = n.child(seg); n == nil {
			return nil
		}
	}
	return n
}

// child is the node of seg below n: any key of a map, a named key, or
// an element of a list; nil if seg is no key there.
func (n *keyTree) child(seg string) *keyTree {
	switch {
	case n.any != nil:
		return n.any
	case n.children[seg] != nil:
		return n.children[seg]
	case n.typ.Kind() == reflect.Slice:
		return newKeyTree(n.typ.Elem())
	default:
		return nil
	}
}

// closest is the child key spelt closest to seg (spelling.Closest); ""
// if none is close.
func (n *keyTree) closest(seg string) string {
	return spelling.Closest(seg, slices.Collect(maps.Keys(n.children)))
}

// envVarFor is the variable that sets the key path (audit.required:
// MCPWARDEN_AUDIT__REQUIRED).
func envVarFor(path []string) string {
	return EnvPrefix + strings.ToUpper(strings.Join(path, "__"))
}

// envSources maps each key an environment variable set to the variable.
type envSources map[string]string

// of returns the variable that set key or a key above it, and that key;
// "" if the key came from the file. The longest match wins.
func (s envSources) of(key string) (variable, set string) {
	for k, v := range s {
		if (key == k || strings.HasPrefix(key, k+".") || strings.HasPrefix(key, k+"[")) && len(k) > len(set) {
			variable, set = v, k
		}
	}
	return variable, set
}

// sortedVars returns the variables of s, sorted.
func (s envSources) sortedVars() []string {
	vars := make([]string, 0, len(s))
	for _, v := range s {
		vars = append(vars, v)
	}
	slices.SortFunc(vars, cmp.Compare)
	return vars
}

// split finds a key path spelt s with single underscores between its levels
// (audit_required: audit.required), nil if there is none. A map's member
// is taken to end at the next underscore.
func (n *keyTree) split(s string) []string {
	if n.any != nil {
		name, rest, more := strings.Cut(s, "_")
		if !more {
			return []string{name}
		}
		if p := n.any.split(rest); p != nil {
			return append([]string{name}, p...)
		}
		return nil
	}
	for name, child := range n.children {
		switch {
		case s == name:
			return []string{name}
		case strings.HasPrefix(s, name+"_"):
			if p := child.split(s[len(name)+1:]); p != nil {
				return append([]string{name}, p...)
			}
		}
	}
	return nil
}
