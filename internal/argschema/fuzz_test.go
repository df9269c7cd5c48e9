package argschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/jsonargs"
	"github.com/mcpwarden/mcpwarden/internal/keyfold"
)

// fuzzSchemas are the schemas FuzzSchemaCheck checks values against: the
// shapes real servers list (pydantic's $defs, $ref and anyOf with null,
// zod's flat objects, draft-07 definitions and items lists, recursion).
var fuzzSchemas = []string{
	pydanticNested,
	`{"type": "object", "properties": {"paths": {"type": "array", "items": {"type": "string"}}, "force": {"type": "boolean"}, "max_bytes": {"type": "integer"}, "ratio": {"type": "number"}}}`,
	`{"type": "object", "properties": {"a": {"type": ["string", "null"]}, "b": {"oneOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "object", "properties": {"c": {"type": "boolean"}}}]}}}`,
	`{"type": "object", "properties": {"t": {"$ref": "#"}, "n": {"type": "integer"}, "l": {"type": "array", "items": [{"type": "string"}], "additionalItems": {"type": "boolean"}}}}`,
	`{"type": "object", "properties": {"x": {"allOf": [{"type": ["number", "string"]}, {"type": ["integer", "boolean"]}]}, "e": {"const": 3}, "p": {"type": "object", "additionalProperties": {"$ref": "#/definitions/D"}}}, "definitions": {"D": {"type": "array", "prefixItems": [{"type": "null"}]}}}`,
	`{"type": "object", "properties": {"path": {"type": "string"}, "Path": {"type": "array"}, "o": {"nullable": true, "type": "object", "properties": {"k": {"enum": [1, "a"]}}}}}`,
}

// FuzzSchemaCheck checks Check against refFits, a plain recursive reading
// of the same schema: for every value and schema, Check accepts the value
// iff each part of it is of a type the schema declares for it, and a
// refusal is a *MismatchError.
func FuzzSchemaCheck(f *testing.F) {
	for i := range fuzzSchemas {
		f.Add(uint8(i), []byte(`{"options": {"paths": "[\"/etc\"]", "force": "yes"}, "limit": 1.0}`))
		f.Add(uint8(i), []byte(`{"paths": ["a", 1], "force": true, "max_bytes": 1e3, "ratio": "1"}`))
		f.Add(uint8(i), []byte(`{"a": null, "b": [1, 2.5], "t": {"t": {"n": -0}}, "l": ["s", true, 1]}`))
		f.Add(uint8(i), []byte(`{"x": 1.0, "e": 3, "p": {"q": [null, 1]}, "PATH": [], "o": {"K": true}}`))
	}
	compiled := make([]*Schema, len(fuzzSchemas))
	docs := make([]any, len(fuzzSchemas))
	for i, s := range fuzzSchemas {
		var err error
		if compiled[i], err = Compile([]byte(s)); err != nil {
			f.Fatalf("schema %d: %v", i, err)
		}
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		if err := dec.Decode(&docs[i]); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		i := int(which) % len(fuzzSchemas)
		args, _, err := jsonargs.Parse(raw)
		if err != nil || hugeExponent(raw) {
			return
		}
		want := refFits(docs[i], docs[i], args)
		err = compiled[i].Check(args)
		if got := err == nil; got != want {
			t.Fatalf("schema %d, arguments %s: Check accepts = %v (%v), the reference says %v", i, raw, got, err, want)
		}
		if err != nil {
			if _, ok := err.(*MismatchError); !ok {
				t.Fatalf("error %T is not a *MismatchError", err)
			}
		}
	})
}

// hugeExponent reports whether raw may hold a number whose exponent
// big.Rat would take long to expand.
func hugeExponent(raw []byte) bool {
	for i := bytes.IndexAny(raw, "eE"); i >= 0; {
		j := i + 1
		for j < len(raw) && (raw[j] == '+' || raw[j] == '-') {
			j++
		}
		n := 0
		for j < len(raw) && raw[j] >= '0' && raw[j] <= '9' {
			j, n = j+1, n+1
		}
		if n > 3 {
			return true
		}
		k := bytes.IndexAny(raw[i+1:], "eE")
		if k < 0 {
			return false
		}
		i += 1 + k
	}
	return false
}

// refFits is the reference: whether v fits schema s of document doc, read
// straight from the decoded JSON.
func refFits(doc, s, v any) bool {
	switch s := s.(type) {
	case bool:
		return s
	case map[string]any:
		if !refType(s, v) {
			return false
		}
		if ref, ok := s["$ref"].(string); ok && !refFits(doc, refTarget(doc, ref), v) {
			return false
		}
		if all, ok := s["allOf"].([]any); ok {
			for _, b := range all {
				if !refFits(doc, b, v) {
					return false
				}
			}
		}
		for _, kw := range []string{"anyOf", "oneOf"} {
			if some, ok := s[kw].([]any); ok && len(some) > 0 {
				fits := false
				for _, b := range some {
					fits = fits || refFits(doc, b, v)
				}
				if !fits {
					return false
				}
			}
		}
		switch v := v.(type) {
		case map[string]any:
			props, _ := s["properties"].(map[string]any)
			for k, x := range v {
				matched := false
				for name, p := range props {
					if keyfold.Equal(name, k) {
						matched = true
						if !refFits(doc, p, x) {
							return false
						}
					}
				}
				if add, ok := s["additionalProperties"]; ok && !matched && add != false && !refFits(doc, add, x) {
					return false
				}
			}
		case []any:
			prefix, _ := s["prefixItems"].([]any)
			items := s["items"]
			if l, ok := items.([]any); ok && prefix == nil {
				prefix, items = l, s["additionalItems"]
			}
			for i, x := range v {
				switch {
				case i < len(prefix):
					if !refFits(doc, prefix[i], x) {
						return false
					}
				case items != nil:
					if !refFits(doc, items, x) {
						return false
					}
				}
			}
		}
		return true
	}
	return false
}

// refType reports whether v is of a type s declares.
func refType(s map[string]any, v any) bool {
	var names []string
	switch t := s["type"].(type) {
	case string:
		names = []string{t}
	case []any:
		for _, n := range t {
			names = append(names, n.(string))
		}
	case nil:
		vals, ok := s["enum"].([]any)
		if c, isConst := s["const"]; !ok && isConst {
			vals, ok = []any{c}, true
		}
		if !ok {
			return true
		}
		for _, e := range vals {
			names = append(names, strings.Replace(refTypeName(e), "integer", "number", 1))
		}
	}
	if s["nullable"] == true {
		names = append(names, "null")
	}
	got := refTypeName(v)
	for _, n := range names {
		if n == got || (n == "number" && got == "integer") {
			return true
		}
	}
	return false
}

func refTypeName(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if r, ok := new(big.Rat).SetString(string(v)); ok && r.IsInt() {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	default:
		return "object"
	}
}

func refTarget(doc any, ref string) any {
	cur := doc
	for _, tok := range strings.Split(strings.TrimPrefix(ref, "#"), "/")[1:] {
		cur = cur.(map[string]any)[tok]
	}
	return cur
}

// FuzzCompile compiles any schema an upstream may list and checks a few
// arguments against it: nothing panics or hangs, and a refusal is a
// *MismatchError or ErrTooComplex.
func FuzzCompile(f *testing.F) {
	for _, s := range fuzzSchemas {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"$ref": "#"}`, `{"allOf": [{"$ref": "#/$defs/A"}], "$defs": {"A": {"anyOf": [{"$ref": "#"}]}}}`,
		`{"properties": {"a": {"$ref": "#/properties/a"}}}`, `{"type": ["object", 1]}`, `{"items": [true, false], "additionalItems": {"type": "null"}}`,
		`{"properties": {"a": {"$ref": "#/$defs/x~1y"}}, "$defs": {"x/y": {"type": "string"}}}`, `false`, `[]`, `{"$ref": "#/$defs/A/items/0"}`,
	} {
		f.Add([]byte(s))
	}
	args := []map[string]any{}
	for _, raw := range []string{`{}`, `{"a": "[1]", "paths": ["x", 1], "t": {"t": {"n": 1.5}}}`, `{"a": {"a": {"a": [null, true, {"b": "c"}]}}, "x": 1, "y": 1}`} {
		m, _, err := jsonargs.Parse([]byte(raw))
		if err != nil {
			f.Fatal(err)
		}
		args = append(args, m)
	}
	f.Fuzz(func(t *testing.T, schema []byte) {
		s, _ := Compile(schema)
		for _, a := range args {
			err := s.Check(a)
			var me *MismatchError
			if err != nil && !errors.As(err, &me) && !errors.Is(err, ErrTooComplex) {
				t.Fatalf("Check error %T %v", err, err)
			}
		}
	})
}
