package argview

import (
	"maps"
	"slices"
	"strconv"
)

// An undeclaredKey is a key below the top level that the tool's schema
// does not declare: its path from the top (`"opts"."x"`, quoted), its
// value, and whether the value is path-like (its key or one above it is).
type undeclaredKey struct {
	path     string
	value    any
	pathLike bool
}

// undeclared returns the keys of args the schema does not declare: top,
// the top-level ones, and nested, the deeper ones in order of their
// paths. A nil schema declares nothing and hides nothing (it is not
// known). At the top level a schema without properties declares no key;
// below it, only an object schema with properties declares keys (an
// object without them is free-form), and arrays are followed through
// their items schema.
func undeclared(schema map[string]any, args map[string]any, pathKey func(string) bool) (top map[string]bool, nested []undeclaredKey) {
	if schema == nil {
		return nil, nil
	}
	props, _ := schema["properties"].(map[string]any)
	for _, k := range slices.Sorted(maps.Keys(args)) {
		sub, ok := props[k]
		if !ok {
			if top == nil {
				top = map[string]bool{}
			}
			top[k] = true
			continue
		}
		m, _ := sub.(map[string]any)
		nested = walkUndeclared(m, args[k], Quote(k), isPathKey(pathKey, k), pathKey, nested)
	}
	return top, nested
}

// walkUndeclared appends the undeclared keys within v, found at path,
// under schema (nil: nothing is declared or undeclared there); pathLike
// says v is under a path-like key.
func walkUndeclared(schema map[string]any, v any, path string, pathLike bool, pathKey func(string) bool, out []undeclaredKey) []undeclaredKey {
	if schema == nil {
		return out
	}
	switch t := v.(type) {
	case map[string]any:
		props, ok := schema["properties"].(map[string]any)
		if !ok {
			return out
		}
		for _, k := range slices.Sorted(maps.Keys(t)) {
			sub, declared := props[k]
			under := pathLike || isPathKey(pathKey, k)
			if !declared {
				out = append(out, undeclaredKey{path: path + "." + Quote(k), value: t[k], pathLike: under})
				continue
			}
			m, _ := sub.(map[string]any)
			out = walkUndeclared(m, t[k], path+"."+Quote(k), under, pathKey, out)
		}
	case []any:
		items, _ := schema["items"].(map[string]any)
		for i, e := range t {
			out = walkUndeclared(items, e, path+"["+strconv.Itoa(i)+"]", pathLike, pathKey, out)
		}
	}
	return out
}

// isPathKey reports whether pathKey, which may be nil, says k is path-like.
func isPathKey(pathKey func(string) bool, k string) bool { return pathKey != nil && pathKey(k) }
