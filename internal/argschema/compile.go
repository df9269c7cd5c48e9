// Package argschema checks a call's arguments against the JSON types its
// tool's inputSchema declares, so that a rule is only ever matched against a
// value of the type the upstream reads. Servers coerce: pydantic (the Python
// SDK) in lax mode decodes a JSON string where a list or object is declared
// and reads "yes" as true, zod and Go decoders differ again, so a value of
// another JSON type than the declared one is one the rules may see as text
// and the server as something else. Compile turns a schema into an
// immutable *Schema, once per tool listing; Schema.Check is pure, safe for
// concurrent use and allocates nothing when the arguments fit.
//
// Only JSON types are checked: `type` (a name or a list of names; `integer`
// is a number with an integral value, as pydantic accepts 1.0), `nullable`,
// the types of `enum` and `const` values where `type` is absent, `properties`
// at any depth, `additionalProperties` as a schema, `items` and
// `prefixItems` (and the draft-07 array form of `items`), `allOf`, `anyOf`
// and `oneOf` (a value fits if it fits any branch), and `$ref` to the
// schema's own `#/$defs/…`, `#/definitions/…` or any JSON pointer into it.
// Everything else (formats, patterns, bounds, required keys, enum values,
// `not`, `if`) is the upstream's to check. A schema without `type` (or
// with an empty one, as mcp-go writes a tool with none) accepts every type.
// An argument key matches a declared property as a Go server binds it
// (keyfold): `PATH` is checked as `path`. Undeclared keys are checked
// against `additionalProperties` when it is a schema; `false` there is not
// a type and refuses nothing.
package argschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/mcpwarden/mcpwarden/internal/keyfold"
)

// A Schema is a compiled inputSchema. The nil *Schema checks nothing: it is
// what a tool without an inputSchema has. A Schema is immutable and safe
// for concurrent use.
type Schema struct {
	root *node
}

// A node is one compiled schema. Its zero value accepts nothing; compile
// sets types to anyType where the schema does not say.
type node struct {
	types      typeSet
	props      map[string]*node   // declared properties by name
	folded     map[string][]*node // keyfold.Key of a declared name → the properties with it
	additional *node              // undeclared keys; nil = anything
	prefix     []*node            // prefixItems (or items as an array)
	items      *node              // items after prefix; nil = anything
	allOf      []*node            // every one must fit, $ref targets included
	anyOf      [][]*node          // per anyOf/oneOf: one branch must fit
}

// Compile compiles schema, a tool's inputSchema as JSON. An empty schema or
// null gives the nil Schema, and so does one that is not JSON, with an
// error: nothing can be known from it. A schema that cannot be used as
// written (a $ref that leads nowhere or outside it, a cycle of $refs, an
// unknown type name, a keyword of the wrong shape) still gives a Schema,
// which checks the types its top-level properties declare with `type`
// (nothing deeper), and the error says what was wrong, for the caller to
// log once.
func Compile(schema []byte) (*Schema, error) {
	schema = bytes.TrimSpace(schema)
	if len(schema) == 0 || bytes.Equal(schema, []byte("null")) {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("inputSchema is not JSON: %w", err)
	}
	c := &compiler{doc: doc, refs: map[string]*node{}, open: map[string]int{}}
	root := c.ref("#", "", 0)
	if c.err == nil {
		return &Schema{root: root}, nil
	}
	return &Schema{root: shallow(doc)}, c.err
}

// A compiler compiles one schema document.
type compiler struct {
	doc  any
	refs map[string]*node // compiled $ref targets by reference, for recursive schemas
	open map[string]int   // the references being compiled, with the depth each was entered at
	err  error            // the first reason the schema cannot be used as written
}

func (c *compiler) fail(format string, args ...any) *node {
	if c.err == nil {
		c.err = fmt.Errorf(format, args...)
	}
	return &node{types: anyType}
}

// node compiles s, found at where; depth counts the descents into a value
// (properties, items) on the way to it, which tell a recursive schema from
// a cycle of references.
func (c *compiler) node(s any, where string, depth int) *node {
	switch s := s.(type) {
	case bool:
		if s {
			return &node{types: anyType}
		}
		return &node{}
	case map[string]any:
		n := &node{}
		c.fill(n, s, where, depth)
		return n
	default:
		return c.fail("%s: a schema is an object or a boolean, not %s", where, kindOf(s))
	}
}

// fill compiles the keywords of s into n.
func (c *compiler) fill(n *node, s map[string]any, where string, depth int) {
	n.types = c.types(s, where)
	if ref, ok := s["$ref"]; ok {
		r, isString := ref.(string)
		if !isString {
			c.fail("%s/$ref: not a string", where)
		} else {
			n.allOf = append(n.allOf, c.ref(r, where, depth))
		}
	}
	if all, ok := s["allOf"]; ok {
		n.allOf = append(n.allOf, c.list(all, where+"/allOf", depth)...)
	}
	for _, kw := range [...]string{"anyOf", "oneOf"} {
		if some, ok := s[kw]; ok {
			if branches := c.list(some, where+"/"+kw, depth); len(branches) > 0 {
				n.anyOf = append(n.anyOf, branches)
			}
		}
	}
	if props, ok := s["properties"]; ok {
		m, ok := props.(map[string]any)
		if !ok {
			c.fail("%s/properties: not an object", where)
		}
		for name, p := range m {
			pn := c.node(p, where+"/properties/"+name, depth+1)
			if n.props == nil {
				n.props, n.folded = make(map[string]*node, len(m)), make(map[string][]*node, len(m))
			}
			n.props[name] = pn
			k := keyfold.Key(name)
			n.folded[k] = append(n.folded[k], pn)
		}
	}
	if add, ok := s["additionalProperties"]; ok && add != false {
		n.additional = c.node(add, where+"/additionalProperties", depth+1)
	}
	if _, ok := s["patternProperties"]; ok {
		// A key a pattern matches is not under additionalProperties, and
		// ECMA-262 patterns are not RE2: leave undeclared keys alone.
		n.additional = nil
	}
	if prefix, ok := s["prefixItems"]; ok {
		n.prefix = c.list(prefix, where+"/prefixItems", depth+1)
	}
	if items, ok := s["items"]; ok {
		if _, isList := items.([]any); isList && n.prefix == nil {
			// Draft-07: items as a list is prefixItems, additionalItems the rest.
			n.prefix = c.list(items, where+"/items", depth+1)
			if rest, ok := s["additionalItems"]; ok {
				n.items = c.node(rest, where+"/additionalItems", depth+1)
			}
		} else {
			n.items = c.node(items, where+"/items", depth+1)
		}
	}
}

// list compiles a list of schemas, each at depth.
func (c *compiler) list(v any, where string, depth int) []*node {
	l, ok := v.([]any)
	if !ok {
		c.fail("%s: not a list of schemas", where)
		return nil
	}
	out := make([]*node, len(l))
	for i, s := range l {
		out[i] = c.node(s, where+"/"+strconv.Itoa(i), depth)
	}
	return out
}

// ref compiles the target of a $ref, once per reference: a recursive
// schema (a tree of pydantic models) refers back to a node being compiled,
// which is complete by the time any value is checked against it. A
// reference reached again at the depth it was entered at, with no value
// descended into between (`{"$ref": "#"}`), is a cycle no value ends.
func (c *compiler) ref(ref, where string, depth int) *node {
	if n, ok := c.refs[ref]; ok {
		if d, open := c.open[ref]; open && d == depth {
			return c.fail("%s/$ref: %q refers to itself with no property or item between", where, ref)
		}
		return n
	}
	target := c.resolve(ref, where)
	if target == nil {
		return &node{types: anyType}
	}
	n := &node{}
	c.refs[ref], c.open[ref] = n, depth
	defer delete(c.open, ref)
	*n = *c.node(target, ref, depth)
	return n
}

// resolve returns what ref points to in the document, or nil after
// recording why it points nowhere.
func (c *compiler) resolve(ref, where string) any {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		c.fail("%s/$ref: %q is not in the schema (only #… references are read)", where, ref)
		return nil
	}
	if f, err := url.PathUnescape(frag); err == nil {
		frag = f
	}
	cur := c.doc
	if frag == "" {
		return cur
	}
	if !strings.HasPrefix(frag, "/") {
		c.fail("%s/$ref: %q is not a JSON pointer", where, ref)
		return nil
	}
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch v := cur.(type) {
		case map[string]any:
			if cur, ok = v[tok]; !ok {
				c.fail("%s/$ref: %q leads nowhere (no %q)", where, ref, tok)
				return nil
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v) {
				c.fail("%s/$ref: %q leads nowhere (no item %q)", where, ref, tok)
				return nil
			}
			cur = v[i]
		default:
			c.fail("%s/$ref: %q leads nowhere", where, ref)
			return nil
		}
	}
	return cur
}

// types returns the types s allows: its `type`, else the types of its
// `enum` or `const` values, else every type; `nullable: true` adds null.
func (c *compiler) types(s map[string]any, where string) typeSet {
	t, err := declaredTypes(s)
	if err != nil {
		c.fail("%s: %w", where, err)
		return anyType
	}
	return t
}

// declaredTypes is types without the compiler, also used by shallow.
func declaredTypes(s map[string]any) (typeSet, error) {
	var t typeSet
	switch v := s["type"].(type) {
	case nil:
		if vals, ok := s["enum"].([]any); ok {
			for _, e := range vals {
				t |= typeOfValue(e)
			}
		} else if e, ok := s["const"]; ok {
			t = typeOfValue(e)
		} else {
			t = anyType
		}
	case string:
		if v == "" {
			return anyType, nil // as mcp-go writes a tool with no schema
		}
		var err error
		if t, err = typeNamed(v); err != nil {
			return anyType, err
		}
	case []any:
		for _, name := range v {
			str, _ := name.(string)
			one, err := typeNamed(str)
			if err != nil {
				return anyType, err
			}
			t |= one
		}
	default:
		return anyType, fmt.Errorf("type is %s, not a name or a list of names", kindOf(v))
	}
	if s["nullable"] == true {
		t |= typeNull
	}
	return t, nil
}

// typeOfValue is the type an enum or const value stands for; a number
// stands for any number.
func typeOfValue(v any) typeSet {
	t := typeOf(v)
	if t == typeInteger {
		return typeNumber
	}
	return t
}

// shallow is the fallback for a schema that cannot be used as written: the
// top-level properties with the types their own `type` names, nothing
// deeper.
func shallow(doc any) *node {
	root := &node{types: anyType}
	s, _ := doc.(map[string]any)
	props, _ := s["properties"].(map[string]any)
	for name, p := range props {
		pn := &node{types: anyType}
		if m, ok := p.(map[string]any); ok {
			if _, hasType := m["type"]; hasType {
				if t, err := declaredTypes(m); err == nil {
					pn.types = t
				}
			}
		}
		if root.props == nil {
			root.props, root.folded = map[string]*node{}, map[string][]*node{}
		}
		root.props[name] = pn
		k := keyfold.Key(name)
		root.folded[k] = append(root.folded[k], pn)
	}
	return root
}

var errUnknownType = errors.New("unknown type")

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	default:
		return "an object"
	}
}
