package config

import (
	"cmp"
	"reflect"
	"slices"
	"strings"
	"time"
)

// keyTree is the shape of the config's keys, read from the koanf tags of
// Config: a node per key, children for a struct's fields, one wildcard
// child for a map's keys, none for a value (a slice, a duration, a scalar).
type keyTree struct {
	children map[string]*keyTree
	any      *keyTree // a map's members, under any key
}

var durationType = reflect.TypeFor[time.Duration]()

// newKeyTree reads the keys of t.
func newKeyTree(t reflect.Type) *keyTree {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	n := &keyTree{}
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
		switch {
		case n.any != nil:
			n = n.any
		case n.children[seg] != nil:
			n = n.children[seg]
		default:
			return false, i, n.closest(seg)
		}
	}
	return true, len(path), ""
}

// closest is the child key spelt closest to seg, if within a third of its
// length in edits (at least one); "" if none is.
func (n *keyTree) closest(seg string) string {
	best, bestD := "", 0
	for name := range n.children {
		d := editDistance(seg, name)
		if d <= max(1, len(name)/3) && (best == "" || d < bestD || d == bestD && name < best) {
			best, bestD = name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
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
