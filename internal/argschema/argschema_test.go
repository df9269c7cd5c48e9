package argschema

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/jsonargs"
)

// pydanticNested is the shape pydantic emits for nested models: $defs,
// $ref, anyOf with null for an Optional, and a title on everything.
const pydanticNested = `{
  "$defs": {
    "Options": {"properties": {"paths": {"items": {"type": "string"}, "title": "Paths", "type": "array"},
                               "force": {"default": false, "title": "Force", "type": "boolean"}},
                "title": "Options", "type": "object"},
    "Node": {"properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
             "type": "object"}
  },
  "properties": {
    "options": {"$ref": "#/$defs/Options"},
    "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": null, "title": "Limit"},
    "tree": {"$ref": "#/$defs/Node"},
    "mode": {"enum": ["fast", "slow"]},
    "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
    "env": {"type": "object", "additionalProperties": {"type": "string"}},
    "legacy": {"$ref": "#/definitions/Legacy"}
  },
  "definitions": {"Legacy": {"type": ["string", "null"]}},
  "required": ["options"],
  "title": "call_toolArguments",
  "type": "object"
}`

func mustCompile(t *testing.T, schema string) *Schema {
	t.Helper()
	s, err := Compile([]byte(schema))
	if err != nil {
		t.Fatalf("Compile(%s): %v", schema, err)
	}
	return s
}

func parse(t *testing.T, args string) map[string]any {
	t.Helper()
	m, _, err := jsonargs.Parse([]byte(args))
	if err != nil {
		t.Fatalf("jsonargs.Parse(%s): %v", args, err)
	}
	return m
}

func TestCheck(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, pydanticNested)
	tests := []struct {
		name, args string
		want       string // the error, "" for none
	}{
		{"arguments of the declared types fit", `{"options": {"paths": ["a", "b"], "force": true}, "limit": 3, "mode": "fast", "pair": ["x", 2], "env": {"A": "1"}, "legacy": null}`, ""},
		{"a list sent as text in a nested model is refused", `{"options": {"paths": "[\"/etc/passwd\"]"}}`, `argument "options.paths" is a string, but the tool declares an array; send a JSON array`},
		{"a boolean sent as yes is refused", `{"options": {"force": "yes"}}`, `argument "options.force" is a string, but the tool declares a boolean; send true or false`},
		{"a number in a list of strings is refused with its index", `{"options": {"paths": ["a", "b", 3]}}`, `argument "options.paths[2]" is a number, but the tool declares a string; send a JSON string`},
		{"an optional integer takes null", `{"limit": null}`, ""},
		{"an optional integer takes 1.0 as pydantic does", `{"limit": 1.0}`, ""},
		{"an optional integer refuses a fraction", `{"limit": 1.5}`, `argument "limit" is a number with a fraction, but the tool declares an integer or null; send a JSON number with no fraction, or send null`},
		{"an optional integer refuses a number as text", `{"limit": "12"}`, `argument "limit" is a string, but the tool declares an integer or null; send a JSON number with no fraction, or send null`},
		{"a model sent as text is refused", `{"options": "{\"paths\": [\"/etc\"]}"}`, `argument "options" is a string, but the tool declares an object; send a JSON object`},
		{"a recursive model is checked at depth", `{"tree": {"name": "a", "children": [{"name": "b", "children": [{"name": 7}]}]}}`, `argument "tree.children[0].children[0].name" is a number, but the tool declares a string; send a JSON string`},
		{"an enum's type stands for its type", `{"mode": true}`, `argument "mode" is a boolean, but the tool declares a string; send a JSON string`},
		{"prefixItems are checked by position", `{"pair": ["x", "2"]}`, `argument "pair[1]" is a string, but the tool declares an integer; send a JSON number with no fraction`},
		{"additionalProperties as a schema is checked", `{"env": {"A": 1}}`, `argument "env.A" is a number, but the tool declares a string; send a JSON string`},
		{"a draft-07 definitions ref is followed", `{"legacy": ["x"]}`, `argument "legacy" is an array, but the tool declares a string or null; send a JSON string, or send null`},
		{"a key differing in case is checked as the declared one", `{"OPTIONS": {"Force": "on"}}`, `argument "OPTIONS.Force" is a string, but the tool declares a boolean; send true or false`},
		{"a key with the long s is checked as the declared one", `{"optionſ": {"force": "1"}}`, `argument "optionſ.force" is a string, but the tool declares a boolean; send true or false`},
		{"undeclared keys are not checked", `{"other": "[1]"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := s.Check(parse(t, tt.args))
			got := ""
			if err != nil {
				got = err.Error()
				var me *MismatchError
				if !errors.As(err, &me) {
					t.Errorf("error %T is not a *MismatchError", err)
				}
			}
			if got != tt.want {
				t.Errorf("Check(%s)\n got %q\nwant %q", tt.args, got, tt.want)
			}
		})
	}
}

func TestSchemasWithNothingToCheckAcceptEverything(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, schema string }{
		{"no schema", ``},
		{"a null schema", `null`},
		{"an object with no properties", `{"type": "object"}`},
		{"an object with empty properties", `{"type": "object", "properties": {}}`},
		{"the true schema", `true`},
		{"a property with no type", `{"type": "object", "properties": {"paths": {"description": "anything"}}}`},
		{"additionalProperties false", `{"type": "object", "properties": {}, "additionalProperties": false}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mustCompile(t, tt.schema)
			if err := s.Check(parse(t, `{"paths": "[\"x\"]", "n": {"deep": [1, "2"]}}`)); err != nil {
				t.Errorf("Check: %v", err)
			}
		})
	}
}

func TestUnusableSchemaChecksOnlyTopLevelTypes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schema string
		wantErr      string
	}{
		{"a ref that leads nowhere", `{"type": "object", "properties": {"paths": {"type": "array"}, "o": {"$ref": "#/$defs/Missing"}}}`, "leads nowhere"},
		{"a ref outside the schema", `{"type": "object", "properties": {"paths": {"type": "array"}, "o": {"$ref": "https://example.com/s.json"}}}`, "not in the schema"},
		{"a ref to itself", `{"type": "object", "properties": {"paths": {"type": "array"}, "o": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"$ref": "#/$defs/A"}}}`, "refers to itself"},
		{"two refs in a cycle through allOf", `{"type": "object", "properties": {"paths": {"type": "array"}, "o": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"allOf": [{"$ref": "#/$defs/B"}]}, "B": {"anyOf": [{"$ref": "#/$defs/A"}]}}}`, "refers to itself"},
		{"the root referring to itself", `{"type": "object", "properties": {"paths": {"type": "array"}}, "allOf": [{"$ref": "#"}]}`, "refers to itself"},
		{"an unknown type name", `{"type": "object", "properties": {"paths": {"type": "array"}, "o": {"type": "file"}}}`, "unknown type"},
		{"a type that is a number", `{"type": "object", "properties": {"paths": {"type": "array"}, "o": {"type": 3}}}`, "not a name"},
		{"properties that are a list", `{"type": "object", "properties": {"paths": {"type": "array"}}, "allOf": [{"properties": []}]}`, "not an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Compile([]byte(tt.schema))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Compile error = %v, want one saying %q", err, tt.wantErr)
			}
			if s == nil {
				t.Fatal("Compile returned no Schema")
			}
			if err := s.Check(parse(t, `{"paths": "[\"/outside\"]"}`)); err == nil {
				t.Error("a top-level string where an array is declared was accepted")
			}
			if err := s.Check(parse(t, `{"paths": [], "o": {"x": 1}}`)); err != nil {
				t.Errorf("Check: %v", err)
			}
		})
	}
}

func TestRecursiveSchemaIsNotACycle(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, `{"type": "object", "properties": {"t": {"$ref": "#"}, "n": {"type": "integer"}}}`)
	if err := s.Check(parse(t, `{"t": {"t": {"n": 1}}}`)); err != nil {
		t.Errorf("Check: %v", err)
	}
	if err := s.Check(parse(t, `{"t": {"t": {"n": "1"}}}`)); err == nil {
		t.Error("a string for an integer at depth was accepted")
	}
}

func TestIntegral(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n    string
		want bool
	}{
		{"0", true}, {"-0", true}, {"12", true}, {"1.0", true}, {"1.000", true}, {"1e2", true}, {"1.5e1", true},
		{"100e-2", true}, {"0e-5", true}, {"12345678901234567890", true}, {"1E+2", true},
		{"1.5", false}, {"1e-1", false}, {"-0.5", false}, {"12345678901234567890.5", false}, {"1.25e1", false},
	}
	for _, tt := range tests {
		if got := integral(tt.n); got != tt.want {
			t.Errorf("integral(%s) = %v, want %v", tt.n, got, tt.want)
		}
	}
}

func TestCheckAllocatesNothingWhenArgumentsFit(t *testing.T) {
	s := mustCompile(t, pydanticNested)
	args := parse(t, `{"options": {"paths": ["a", "b"], "force": true}, "LIMIT": 3, "mode": "fast", "pair": ["x", 2], "env": {"A": "1"}}`)
	if n := testing.AllocsPerRun(100, func() {
		if err := s.Check(args); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Check allocates %v times, want 0", n)
	}
}

func BenchmarkCheck(b *testing.B) {
	s, err := Compile([]byte(pydanticNested))
	if err != nil {
		b.Fatal(err)
	}
	args, _, err := jsonargs.Parse([]byte(`{"options": {"paths": ["a", "b"], "force": true}, "limit": 3, "mode": "fast"}`))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Check(args); err != nil {
			b.Fatal(err)
		}
	}
}

func TestBranchingSchemaDoesNotTakeExponentialTime(t *testing.T) {
	t.Parallel()
	// Both branches take an object, so a misfit at the bottom of deep
	// arguments is tried 2^depth ways.
	s := mustCompile(t, `{"$defs": {"N": {"anyOf": [
		{"type": "object", "properties": {"a": {"$ref": "#/$defs/N"}}},
		{"type": "object", "properties": {"a": {"$ref": "#/$defs/N"}, "b": {"type": "string"}}}]}},
		"type": "object", "properties": {"a": {"$ref": "#/$defs/N"}}}`)
	deep := strings.Repeat(`{"a": `, 60) + `1` + strings.Repeat(`}`, 60)
	if err := s.Check(parse(t, deep)); !errors.Is(err, ErrTooComplex) {
		t.Errorf("Check = %v, want ErrTooComplex", err)
	}
	shallow := strings.Repeat(`{"a": `, 8) + `1` + strings.Repeat(`}`, 8)
	var me *MismatchError
	if err := s.Check(parse(t, shallow)); !errors.As(err, &me) {
		t.Errorf("Check of shallow arguments = %v, want a *MismatchError", err)
	}
	fine := strings.Repeat(`{"a": `, 60) + `{}` + strings.Repeat(`}`, 60)
	if err := s.Check(parse(t, fine)); err != nil {
		t.Errorf("Check of arguments that fit = %v", err)
	}
}

func TestSchemaOfSharedBranchesDoesNotTakeExponentialTimeToExplain(t *testing.T) {
	t.Parallel()
	// D0 is anyOf [D1, D1], D1 anyOf [D2, D2], … : 2^40 ways down to a
	// string, shared, with no value between them.
	var defs []string
	for i := range 40 {
		defs = append(defs, fmt.Sprintf(`"D%d": {"anyOf": [{"$ref": "#/$defs/D%d"}, {"$ref": "#/$defs/D%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, `"D40": {"type": "string"}`)
	s := mustCompile(t, `{"$defs": {`+strings.Join(defs, ",")+`}, "type": "object", "properties": {
		"x": {"$ref": "#/$defs/D0"},
		"y": {"anyOf": [{"type": "boolean"}, {"type": "object", "allOf": [{"$ref": "#/$defs/D0"}]}]}}}`)
	for _, args := range []string{`{"x": 1}`, `{"y": 1}`} {
		if err := s.Check(parse(t, args)); err == nil {
			t.Errorf("Check(%s) accepted a number where none is declared", args)
		}
	}
}
