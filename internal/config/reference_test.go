package config

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/audit"
)

//go:generate go test -run TestGeneratedReferenceMatchesTheConfigTypes -update .

// update rewrites docs/config.md and docs/mcpwarden.schema.json from the
// config types instead of comparing them.
var update = flag.Bool("update", false, "rewrite docs/config.md and docs/mcpwarden.schema.json from the config types")

// The generated files, relative to the module root.
const (
	referenceFile = "docs/config.md"
	schemaFile    = "docs/mcpwarden.schema.json"
	schemaID      = "https://raw.githubusercontent.com/mcpwarden/mcpwarden/main/docs/mcpwarden.schema.json"
)

const modulePath = "github.com/mcpwarden/mcpwarden"

// moduleRoot is the module's root directory, two up from this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func TestGeneratedReferenceMatchesTheConfigTypes(t *testing.T) {
	root := moduleRoot(t)
	ref, err := newReference(root)
	if err != nil {
		t.Fatal(err)
	}
	md, schema := ref.markdown(), ref.schema()
	for name, want := range map[string][]byte{referenceFile: md, schemaFile: schema} {
		path := filepath.Join(root, name)
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v: write it with: go generate ./internal/config", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s does not match the config types: run go generate ./internal/config and commit the result", name)
		}
	}
}

// A reference is the config's keys, in the order of the types' fields.
type reference struct {
	blocks []block
	root   map[string]any // the JSON Schema
}

// A block is one struct of the config: a section of the reference.
type block struct {
	key  string // "" for the top level, "servers.<name>", "flow[]"
	doc  string
	rows []row
}

// A row is one key of a block.
type row struct {
	key, typ, def, doc string
}

// docs holds the doc comments of the module's struct types and their
// fields: "pkgpath.Type" and "pkgpath.Type.Field".
type docs map[string]string

func readDocs(root, pkgPath string, into docs) error {
	dir := filepath.Join(root, strings.TrimPrefix(strings.TrimPrefix(pkgPath, modulePath), "/"))
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("reading the doc comments of %s: %w", pkgPath, err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return fmt.Errorf("reading the doc comments of %s: %w", pkgPath, err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, s := range gd.Specs {
				ts := s.(*ast.TypeSpec)
				doc := ts.Doc
				if doc == nil && len(gd.Specs) == 1 {
					doc = gd.Doc
				}
				into[pkgPath+"."+ts.Name.Name] = doc.Text()
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, fld := range st.Fields.List {
					text := fld.Doc.Text()
					if text == "" {
						text = fld.Comment.Text()
					}
					for _, n := range fld.Names {
						into[pkgPath+"."+ts.Name.Name+"."+n.Name] = text
					}
				}
			}
		}
	}
	return nil
}

// oneLine joins a doc comment's lines.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

var (
	durationT        = reflect.TypeFor[time.Duration]()
	textUnmarshalerT = reflect.TypeFor[interface{ UnmarshalText([]byte) error }]()
)

// enums are the values of keys whose type does not say them.
var enums = map[string][]string{
	"log.level":              {"debug", "info", "warn", "error"},
	"log.format":             {"text", "json"},
	"ask.approvals":          {"", "off", "local"},
	"transport":              {"", "stdio", "http", "sse"},
	"isolation":              {"", "shared", "per_principal", "per_session"},
	"on_tool_change":         {"", "warn", "ask", "deny", "hide"},
	"default":                {"", "deny", "ask", "allow"},
	"tier":                   {"", "auto", "namespaces", "landlock"},
	"network":                {"", "proxy", "none", "host"},
	"audit.sink":             {"", "file", "stderr", "none", "http"},
	"paths_case_insensitive": {"", "auto", "true", "false"},
	"enforce":                {"", "enforce", "shadow"},
}

// enumFor is the enum of key, matched on its full path or its last part.
func enumFor(key string) []string {
	if e, ok := enums[key]; ok {
		return e
	}
	last := key[strings.LastIndexAny(key, ".]")+1:]
	if e, ok := enums[last]; ok && !strings.HasPrefix(key, "metrics") && !strings.HasPrefix(key, "tracing") {
		return e
	}
	return nil
}

// constants are the named defaults doc comments refer to.
var constants = map[string]string{
	"DefaultStartupWait":     DefaultStartupWait.String(),
	"DefaultAskTimeout":      DefaultAskTimeout.String(),
	"DefaultApprovalsListen": DefaultApprovalsListen,
	"DefaultMaxBodyBytes":    "4 MiB",
	"DefaultMaxStringLen":    fmt.Sprint(audit.DefaultMaxStringLen),
	"DefaultKeepPrefixLen":   fmt.Sprint(audit.DefaultKeepPrefixLen),
}

// defaultOverrides are the defaults the doc comments do not state in a
// form defaultFrom reads.
var defaultOverrides = map[string]string{
	"policy.default":       "ask",
	"audit.sink":           "file with a path, http with a url, else stderr",
	"tracing.sample_ratio": "1 (all)",
}

// extraDocs describe the fields whose declarations have no doc comment.
var extraDocs = map[string]string{
	"Server.Command": "Command is the program of a stdio server, found on PATH; with Args it is the server mcpwarden starts.",
	"Server.Args":    "Args are the command's arguments.",
	"Server.Env":     "Env are the stdio server's environment variables; a ${VAR} (or ${VAR:-default}) in a value is taken from mcpwarden's environment.",
	"Server.Cwd":     "Cwd is the stdio server's working directory, relative to the config file's directory; it must exist.",
	"Server.URL":     "URL is a remote server's address, reached over streamable HTTP, or legacy SSE with transport: sse.",
	"Server.Headers": "Headers are sent with every request to a remote server; a ${VAR} in a value is taken from mcpwarden's environment.",
}

// segment is the part of doc about field when doc describes several
// fields of t: from field's name to the next field's.
func segment(doc, field string, t reflect.Type) string {
	at := regexp.MustCompile(`\b` + field + `\b`).FindStringIndex(doc)
	if at == nil {
		return doc
	}
	end := len(doc)
	for f := range t.Fields() {
		if f.Name == field {
			continue
		}
		if m := regexp.MustCompile(`\b` + f.Name + `\b`).FindStringIndex(doc[at[1]:]); m != nil && at[1]+m[0] < end {
			end = at[1] + m[0]
		}
	}
	return doc[at[0]:end]
}

var defaultPatterns = []*regexp.Regexp{
	regexp.MustCompile(`(?:^|[\s(])(?:0|""|nil)(?: means|:| is) ((?:[^.;]|\.\S)+)`),
	regexp.MustCompile(`"?([\w.]+)"? \((?:"", )?(?:the )?default\b`),
	regexp.MustCompile(`(\w+) \(""`),
	regexp.MustCompile(`(?:Empty|"") means "?([\w.-]+)`),
	regexp.MustCompile(`, (true|false) unless set`),
	regexp.MustCompile(`(\w+) \(0 = ([^),]+)`),
}

// defaultFrom reads the default a doc comment states for field.
func defaultFrom(doc, field string) string {
	for i, re := range defaultPatterns {
		ms := re.FindAllStringSubmatch(doc, -1)
		for _, m := range ms {
			if i == len(defaultPatterns)-1 {
				if m[1] == field {
					return m[2]
				}
				continue
			}
			v := strings.TrimSuffix(strings.TrimSpace(m[1]), ".")
			if open := strings.LastIndex(v, "("); open >= 0 && strings.Count(v, "(") > strings.Count(v, ")") {
				v = strings.TrimSpace(v[:open])
			}
			if depth := strings.Count(v, "(") - strings.Count(v, ")"); depth < 0 {
				v = strings.TrimSpace(v[:strings.Index(v, ")")])
			}
			if c, ok := constants[v]; ok {
				v = c
			}
			return v
		}
	}
	return ""
}

func newReference(root string) (*reference, error) {
	d := docs{}
	for _, p := range []string{"internal/config", "audit", "rules", "internal/oauth", "internal/telemetry", "internal/pin"} {
		if err := readDocs(root, modulePath+"/"+p, d); err != nil {
			return nil, err
		}
	}
	r := &reference{}
	top := r.walk(d, reflect.TypeFor[Config](), "", "")
	top["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	top["$id"] = schemaID
	top["title"] = "mcpwarden configuration"
	r.root = top
	return r, nil
}

// walk adds the block of struct t at key and returns its schema.
func (r *reference) walk(d docs, t reflect.Type, key, doc string) map[string]any {
	i := len(r.blocks)
	r.blocks = append(r.blocks, block{key: key, doc: doc})
	props := map[string]any{}
	var rows []row
	var lastDoc string
	var fields func(t reflect.Type)
	fields = func(t reflect.Type) {
		for f := range t.Fields() {
			tag := f.Tag.Get("koanf")
			if !f.IsExported() || tag == "-" {
				continue
			}
			if tag == ",squash" || (f.Anonymous && tag == "") {
				fields(f.Type)
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			if name == "" {
				continue
			}
			fdoc := oneLine(d[t.PkgPath()+"."+t.Name()+"."+f.Name])
			if fdoc == "" {
				fdoc = extraDocs[t.Name()+"."+f.Name]
			}
			if fdoc == "" && regexp.MustCompile(`\b`+f.Name+`\b`).MatchString(lastDoc) {
				fdoc = lastDoc
			}
			lastDoc = fdoc
			full := join(key, name)
			typ, schema := r.typeOf(d, f.Type, full, fdoc)
			shown := userDoc(fdoc, t)
			if schema["description"] == nil && shown != "" {
				schema["description"] = shown
			}
			props[name] = schema
			def := defaultFrom(segment(fdoc, f.Name, t), f.Name)
			if def == "" && fdoc == "" {
				def = defaultFrom(segment(oneLine(d[t.PkgPath()+"."+t.Name()]), f.Name, t), f.Name)
			}
			if o, ok := defaultOverrides[full]; ok {
				def = o
			}
			if def == "" {
				def = "—"
			}
			if shown == "" {
				shown = "As described above."
			}
			rows = append(rows, row{key: full, typ: typ, def: def, doc: shown})
		}
	}
	fields(t)
	r.blocks[i].rows = rows
	r.blocks[i].doc = userDoc(fieldNames(doc, t), t)
	return map[string]any{"type": "object", "additionalProperties": false, "properties": props}
}

// goName is a Go identifier a doc comment may name: CamelCase with two
// capitals or more, not an initialism (URL, HTTP).
var goName = regexp.MustCompile(`\b[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*\b`)

// userDoc is doc as a user reads it: the struct's Go field names as
// their keys, named defaults as their values.
func userDoc(doc string, t reflect.Type) string {
	keys := map[string]string{}
	var collect func(t reflect.Type)
	collect = func(t reflect.Type) {
		for f := range t.Fields() {
			tag := f.Tag.Get("koanf")
			if tag == ",squash" {
				collect(f.Type)
				continue
			}
			if name, _, _ := strings.Cut(tag, ","); name != "" && name != "-" {
				keys[f.Name] = "`" + name + "`"
			}
		}
	}
	if t.Kind() == reflect.Struct {
		collect(t)
	}
	if first, rest, ok := strings.Cut(doc, " "); ok && keys[first] != "" {
		doc = keys[first] + " " + rest
	}
	return goName.ReplaceAllStringFunc(doc, func(w string) string {
		if k, ok := keys[w]; ok {
			return k
		}
		if c, ok := constants[w]; ok {
			return c
		}
		return w
	})
}

// fieldNames marks the fields a struct's own doc names by their Go names
// alone (Sink, Path), so that userDoc turns them into keys too.
func fieldNames(doc string, t reflect.Type) string {
	if t.Kind() != reflect.Struct {
		return doc
	}
	for f := range t.Fields() {
		if strings.ToUpper(f.Name) == f.Name || goName.MatchString(f.Name) {
			continue // an initialism, or already a goName
		}
		name, _, _ := strings.Cut(f.Tag.Get("koanf"), ",")
		if name == "" || name == "-" {
			continue
		}
		doc = regexp.MustCompile(`(^|[^.\w])`+f.Name+`\b`).ReplaceAllString(doc, "${1}`"+name+"`")
	}
	return doc
}

func join(key, name string) string {
	if key == "" {
		return name
	}
	return key + "." + name
}

// typeOf names t for the reference and returns its schema; a struct adds
// its own block.
func (r *reference) typeOf(d docs, t reflect.Type, key, doc string) (string, map[string]any) {
	if t == durationT {
		return "duration", map[string]any{"type": "string", "pattern": `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$|^0$`}
	}
	if t.Kind() == reflect.Pointer {
		if t.Elem() == reflect.TypeFor[Sandbox]() {
			_, s := r.typeOf(d, t.Elem(), key, doc)
			return "off, on or map", map[string]any{"anyOf": []any{
				map[string]any{"enum": []any{"off", "on", true, false}},
				s,
			}}
		}
		return r.typeOf(d, t.Elem(), key, doc)
	}
	if reflect.PointerTo(t).Implements(textUnmarshalerT) && t.Kind() != reflect.Struct {
		if t == reflect.TypeFor[ByteSize]() {
			return "size", map[string]any{"type": []any{"string", "integer"}, "pattern": `^[0-9]+ ?([KMGT]i?B?|B)?$`, "minimum": 0}
		}
		return r.scalar("string", []any{"string"}, key)
	}
	switch t.Kind() {
	case reflect.String:
		if t == reflect.TypeFor[CaseRule]() {
			return "auto, true or false", map[string]any{"enum": []any{"", "auto", "true", "false", true, false}}
		}
		return r.scalar("string", []any{"string"}, key)
	case reflect.Bool:
		return "bool", map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int64:
		return "integer", map[string]any{"type": "integer"}
	case reflect.Uint64:
		return "integer", map[string]any{"type": "integer", "minimum": 0}
	case reflect.Float64:
		return "number", map[string]any{"type": "number"}
	case reflect.Slice:
		et, es := r.typeOf(d, t.Elem(), key+"[]", doc)
		return "list of " + et, map[string]any{"type": "array", "items": es}
	case reflect.Map:
		et, es := r.typeOf(d, t.Elem(), key+".<name>", doc)
		return "map of " + et, map[string]any{"type": "object", "additionalProperties": es}
	case reflect.Struct:
		s := r.walk(d, t, key, oneLine(d[t.PkgPath()+"."+t.Name()]))
		return "[map](#" + anchor(key) + ")", s
	}
	panic(fmt.Sprintf("config reference: no schema for %s (%s)", key, t))
}

func (r *reference) scalar(name string, types []any, key string) (string, map[string]any) {
	s := map[string]any{"type": types[0]}
	if e := enumFor(key); e != nil {
		vals := make([]any, len(e))
		for i, v := range e {
			vals[i] = v
		}
		s["enum"] = vals
		var shown []string
		for _, v := range e {
			if v != "" {
				shown = append(shown, v)
			}
		}
		name = strings.Join(shown, ", ")
	}
	return name, s
}
