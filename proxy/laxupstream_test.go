package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/internal/keyfold"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// A laxUpstream is a Go stand-in for a server written with the MCP Python
// SDK (FastMCP): it reads each call's arguments as FastMCP and pydantic in
// lax mode (the default) read them, then does what the tool says and logs
// every file it opens, which is the ground truth of the tests.
//
// The reading, as documented:
//   - FastMCP's FuncMetadata.pre_parse_json (mcp/server/fastmcp/utilities/
//     func_metadata.py in modelcontextprotocol/python-sdk): a top-level
//     argument sent as a string for a parameter not annotated str is
//     json.loads'ed, and the result replaces it unless it is a str, int or
//     float ("Claude desktop is prone to this"): "[\"a\"]" becomes a list,
//     "{…}" a dict.
//   - pydantic's conversion table in lax mode
//     (https://docs.pydantic.dev/latest/concepts/conversion_table/, and
//     https://docs.pydantic.dev/2.3/usage/types/booleans/): bool from a str
//     that lower-cased is '0', 'off', 'f', 'false', 'n', 'no' (False) or
//     '1', 'on', 't', 'true', 'y', 'yes' (True), and from the ints 0 and 1;
//     int from a numeric str (surrounding whitespace stripped, as
//     pydantic-core does) and from a float with no fraction (1.0); float
//     from a numeric str; str only from str (no number → str); list only
//     from a list; a model (object) only from a dict. A field declared
//     Optional (anyOf with null) takes null or the other branch.
//
// With fold set it also binds argument keys to the declared names as a Go
// server does (keyfold: `FORCE` is `force`), standing for a Go server
// whose decoder is as lax; pydantic itself ignores an undeclared key.
type laxUpstream struct {
	rec  *testkit.StandIn
	fold bool

	mu     sync.Mutex
	opened []string // "read <path>", "deleted <path>", …
}

// laxTools are the stand-in's tools, with the schemas FastMCP lists for
// their Python signatures.
var laxTools = map[string]string{
	// def read_multiple_files(paths: list[str])
	"read_multiple_files": `{"type": "object", "properties": {"paths": {"type": "array", "items": {"type": "string"}, "title": "Paths"}}, "required": ["paths"], "title": "read_multiple_filesArguments"}`,
	// def delete_file(path: str, force: bool = False)
	"delete_file": `{"type": "object", "properties": {"path": {"type": "string", "title": "Path"}, "force": {"type": "boolean", "default": false, "title": "Force"}}, "required": ["path"]}`,
	// def read_file(path: str, max_bytes: int = 4096)
	"read_file": `{"type": "object", "properties": {"path": {"type": "string"}, "max_bytes": {"type": "integer", "default": 4096}}, "required": ["path"]}`,
	// def write_file(target: Target, content: str), class Target(BaseModel): path: str
	"write_file": `{"$defs": {"Target": {"type": "object", "properties": {"path": {"type": "string", "title": "Path"}}, "required": ["path"], "title": "Target"}}, "type": "object", "properties": {"target": {"$ref": "#/$defs/Target"}, "content": {"type": "string"}}, "required": ["target", "content"]}`,
	// def archive(options: ArchiveOptions), class ArchiveOptions(BaseModel): paths: list[str]
	"archive": `{"$defs": {"ArchiveOptions": {"type": "object", "properties": {"paths": {"type": "array", "items": {"type": "string"}}}, "required": ["paths"]}}, "type": "object", "properties": {"options": {"$ref": "#/$defs/ArchiveOptions"}}, "required": ["options"]}`,
	// def read_some(paths: list[str] | None = None)
	"read_some": `{"type": "object", "properties": {"paths": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}], "default": null, "title": "Paths"}}}`,
}

// newLaxUpstream returns the stand-in with laxTools.
func newLaxUpstream(fold bool) *laxUpstream {
	u := &laxUpstream{rec: testkit.NewStandIn(), fold: fold}
	for name, schema := range laxTools {
		u.rec.AddTool(mcp.NewToolWithRawSchema(name, "", json.RawMessage(schema)), u.handle(name, schema))
	}
	return u
}

// log returns what the stand-in opened so far.
func (u *laxUpstream) log() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.opened)
}

func (u *laxUpstream) note(what string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.opened = append(u.opened, what)
}

// handle reads a call as FastMCP would and acts on the values read.
func (u *laxUpstream) handle(tool, schema string) server.ToolHandlerFunc {
	var root map[string]any
	if err := json.Unmarshal([]byte(schema), &root); err != nil {
		panic(err)
	}
	return func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		dec := json.NewDecoder(bytes.NewReader(req.Params.RawArguments))
		dec.UseNumber()
		var args map[string]any
		if err := dec.Decode(&args); err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		v, err := u.read(root, args)
		if err != nil {
			return mcp.NewToolResultError("1 validation error: " + err.Error()), nil
		}
		u.act(tool, v)
		return mcp.NewToolResultText("done"), nil
	}
}

// read is FastMCP's reading of args: keys bound to declared names,
// pre_parse_json at the top level, then pydantic's lax validation.
func (u *laxUpstream) read(root, args map[string]any) (map[string]any, error) {
	props, _ := root["properties"].(map[string]any)
	out := map[string]any{}
	for k, v := range args {
		name := k
		if u.fold {
			for declared := range props {
				if keyfold.Equal(declared, k) {
					name = declared
				}
			}
		}
		p, ok := props[name].(map[string]any)
		if !ok {
			continue // pydantic ignores an extra key
		}
		if s, isStr := v.(string); isStr && p["type"] != "string" {
			var pre any
			if json.Unmarshal([]byte(s), &pre) == nil {
				switch pre.(type) {
				case string, float64, bool: // str, int, float (a Python bool is an int)
				default:
					v = pre
				}
			}
		}
		got, err := lax(root, p, v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = got
	}
	return out, nil
}

// lax validates v against schema s (of the document root) as pydantic in
// lax mode does, returning the value the tool's function gets.
func lax(root, s map[string]any, v any) (any, error) {
	if ref, ok := s["$ref"].(string); ok {
		def := root
		for _, tok := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			def = def[tok].(map[string]any)
		}
		return lax(root, def, v)
	}
	if branches, ok := s["anyOf"].([]any); ok {
		for _, b := range branches {
			if got, err := lax(root, b.(map[string]any), v); err == nil {
				return got, nil
			}
		}
		return nil, fmt.Errorf("input %v fits no branch", v)
	}
	switch s["type"] {
	case "null":
		if v == nil {
			return nil, nil
		}
	case "string":
		if str, ok := v.(string); ok {
			return str, nil
		}
	case "boolean":
		switch v := v.(type) {
		case bool:
			return v, nil
		case json.Number:
			switch v.String() {
			case "0":
				return false, nil
			case "1":
				return true, nil
			}
		case float64:
			if v == 0 || v == 1 {
				return v == 1, nil
			}
		case string:
			switch strings.ToLower(v) {
			case "0", "off", "f", "false", "n", "no":
				return false, nil
			case "1", "on", "t", "true", "y", "yes":
				return true, nil
			}
		}
	case "integer":
		var text string
		switch v := v.(type) {
		case json.Number:
			text = v.String()
		case float64:
			text = strconv.FormatFloat(v, 'f', -1, 64)
		case string:
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				return n, nil
			}
		}
		if f, err := strconv.ParseFloat(text, 64); err == nil && f == float64(int64(f)) {
			return int64(f), nil
		}
	case "array":
		if l, ok := v.([]any); ok {
			items, _ := s["items"].(map[string]any)
			out := make([]any, len(l))
			for i, x := range l {
				var err error
				if out[i], err = lax(root, items, x); err != nil {
					return nil, fmt.Errorf("%d: %w", i, err)
				}
			}
			return out, nil
		}
	case "object":
		if m, ok := v.(map[string]any); ok {
			props, _ := s["properties"].(map[string]any)
			out := map[string]any{}
			for k, x := range m {
				p, ok := props[k].(map[string]any)
				if !ok {
					continue
				}
				var err error
				if out[k], err = lax(root, p, x); err != nil {
					return nil, fmt.Errorf("%s: %w", k, err)
				}
			}
			return out, nil
		}
	case nil:
		return v, nil
	}
	return nil, fmt.Errorf("input %#v is not a valid %v", v, s["type"])
}

// act does what tool does with the values read, logging each file opened.
func (u *laxUpstream) act(tool string, args map[string]any) {
	open := func(verb string, p any) {
		path, _ := p.(string)
		if _, err := os.ReadFile(path); err == nil || verb != "read" {
			u.note(verb + " " + path)
		}
	}
	paths := func(l any) {
		list, _ := l.([]any)
		for _, p := range list {
			open("read", p)
		}
	}
	switch tool {
	case "read_multiple_files", "read_some":
		paths(args["paths"])
	case "archive":
		opts, _ := args["options"].(map[string]any)
		paths(opts["paths"])
	case "delete_file":
		if args["force"] == true {
			open("deleted", args["path"])
		}
	case "read_file":
		u.note(fmt.Sprintf("read %v max_bytes=%v", args["path"], args["max_bytes"]))
	case "write_file":
		target, _ := args["target"].(map[string]any)
		open("wrote", target["path"])
	}
}
