package clientconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// A Server is one MCP server entry of a client config, as written there
// (names and values are not converted yet).
type Server struct {
	// Name is the entry's key in the client file.
	Name    string
	Command string
	Args    []string
	Env     map[string]string
	Cwd     string
	URL     string
	// Transport is "stdio", "http" (streamable HTTP) or "sse".
	Transport string
	Headers   map[string]string
	// Disabled is set for entries the client does not start (OpenCode
	// enabled: false, disabled: true elsewhere).
	Disabled bool
	// Excluded are the tools the client keeps from the model (Gemini CLI's
	// excludeTools, Codex's disabled_tools): denied in the mcpwarden config.
	Excluded []string
}

// Permissions are Claude Code permission rules (settings.json
// permissions.allow/ask/deny), as written.
type Permissions struct {
	Allow []string `json:"allow"`
	Ask   []string `json:"ask"`
	Deny  []string `json:"deny"`
}

func (p Permissions) empty() bool { return len(p.Allow)+len(p.Ask)+len(p.Deny) == 0 }

// A Source is what Parse read from a client config.
type Source struct {
	Format Format
	// Servers are the MCP server entries, in file order.
	Servers []Server
	// Permissions are the file's Claude Code permission rules, if any.
	Permissions Permissions
	// Notes say what was seen but not imported.
	Notes []string
}

// Parse reads a client config of format f. JSON with comments and trailing
// commas is accepted for every format. Entry keys that mcpwarden has no use
// for are reported in Source.Notes; a value of the wrong type is an error
// naming the entry.
func Parse(f Format, data []byte) (*Source, error) {
	if f == Unknown || int(f) >= len(formatNames) {
		return nil, errors.New("parsing client config: unknown format")
	}
	if f == Codex {
		return parseCodex(data)
	}
	top, _, err := topLevel(stripJSONC(data))
	if err != nil {
		return nil, err
	}
	src := &Source{Format: f}
	if raw, ok := top["permissions"]; ok {
		if err := json.Unmarshal(raw, &src.Permissions); err != nil {
			return nil, fmt.Errorf("permissions: %w", err)
		}
	}
	key := f.mcpKey()
	raw, ok := top[key]
	if !ok && f == VSCode {
		// VS Code's settings.json nests the same shape under "mcp".
		if m, ok2 := top["mcp"]; ok2 {
			var inner map[string]json.RawMessage
			if json.Unmarshal(m, &inner) == nil && inner["servers"] != nil {
				raw, ok = inner["servers"], true
			}
		}
	}
	if f == ClaudeCode {
		src.Notes = append(src.Notes, projectServers(top["projects"])...)
	}
	if !ok {
		if src.Permissions.empty() {
			return nil, fmt.Errorf("no %q key: not a %s MCP config", key, f)
		}
		return src, nil
	}
	entries, names, err := topLevel(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	for _, name := range names {
		s, notes, err := parseEntry(f, name, entries[name])
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", key, name, err)
		}
		src.Servers = append(src.Servers, s)
		src.Notes = append(src.Notes, notes...)
	}
	return src, nil
}

// ParsePermissions reads the permissions of a Claude Code settings file
// (.claude/settings.json, .claude/settings.local.json, ~/.claude/settings.json).
func ParsePermissions(data []byte) (Permissions, error) {
	var s struct {
		Permissions Permissions `json:"permissions"`
	}
	if err := json.Unmarshal(stripJSONC(data), &s); err != nil {
		return Permissions{}, fmt.Errorf("parsing Claude Code settings: %w", err)
	}
	return s.Permissions, nil
}

// topLevel decodes a JSON object into its members and their keys in order.
// A duplicate key is an error: which one the client uses is not clear.
func topLevel(data []byte) (map[string]json.RawMessage, []string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, fmt.Errorf("parsing JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, errors.New("parsing JSON: not an object")
	}
	m := map[string]json.RawMessage{}
	var order []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("parsing JSON: %w", err)
		}
		k := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, fmt.Errorf("parsing JSON at %q: %w", k, err)
		}
		if _, dup := m[k]; dup {
			return nil, nil, fmt.Errorf("parsing JSON: key %q appears twice", k)
		}
		m[k] = v
		order = append(order, k)
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, fmt.Errorf("parsing JSON: %w", err)
	}
	if dec.More() {
		return nil, nil, errors.New("parsing JSON: data after the object")
	}
	return m, order, nil
}

// knownKeys are the entry keys each format's parser reads.
var knownKeys = map[Format][]string{
	ClaudeDesktop: {"command", "args", "env", "cwd", "url", "headers", "type", "transport", "disabled"},
	ClaudeCode:    {"command", "args", "env", "cwd", "url", "headers", "type", "disabled"},
	Cursor:        {"command", "args", "env", "cwd", "url", "headers", "type", "transport", "disabled"},
	VSCode:        {"command", "args", "env", "cwd", "url", "headers", "type", "disabled"},
	OpenCode:      {"type", "command", "environment", "url", "headers", "enabled"},
	Gemini:        {"command", "args", "env", "cwd", "url", "httpUrl", "headers", "type", "disabled", "excludeTools"},
}

// scalarStrings is m, the table at key (an entry's env or headers), with
// every value a string: a number or a boolean as it is spelt (TOML's
// integers as int64, JSON's numbers as float64), and for anything else an
// error "<key>.<name>: want a string". The JSON and TOML readers share it,
// so an env converts the same way from every client's file.
func scalarStrings(key string, m map[string]any) (map[string]string, []error) {
	out := make(map[string]string, len(m))
	var errs []error
	for k, x := range m {
		switch x := x.(type) {
		case string:
			out[k] = x
		case int64:
			out[k] = strconv.FormatInt(x, 10)
		case float64:
			out[k] = strconv.FormatFloat(x, 'f', -1, 64)
		case bool:
			out[k] = strconv.FormatBool(x)
		default:
			errs = append(errs, fmt.Errorf("%s.%s: want a string", key, k))
		}
	}
	return out, errs
}

func parseEntry(f Format, name string, raw json.RawMessage) (Server, []string, error) {
	var e map[string]json.RawMessage
	if err := json.Unmarshal(raw, &e); err != nil {
		return Server{}, nil, errors.New("not an object")
	}
	s := Server{Name: name}
	var notes []string
	var errs []error
	str := func(key string) string {
		var v string
		if r, ok := e[key]; ok {
			if err := json.Unmarshal(r, &v); err != nil {
				errs = append(errs, fmt.Errorf("%s: want a string", key))
			}
		}
		return v
	}
	strs := func(key string) []string {
		var v []string
		if r, ok := e[key]; ok {
			if err := json.Unmarshal(r, &v); err != nil {
				errs = append(errs, fmt.Errorf("%s: want an array of strings", key))
			}
		}
		return v
	}
	strMap := func(key string) map[string]string {
		r, ok := e[key]
		if !ok {
			return nil
		}
		var v map[string]any
		if err := json.Unmarshal(r, &v); err != nil {
			errs = append(errs, fmt.Errorf("%s: want an object", key))
			return nil
		}
		out, bad := scalarStrings(key, v)
		errs = append(errs, bad...)
		return out
	}
	boolean := func(key string) (bool, bool) {
		r, ok := e[key]
		if !ok {
			return false, false
		}
		var v bool
		if err := json.Unmarshal(r, &v); err != nil {
			errs = append(errs, fmt.Errorf("%s: want true or false", key))
		}
		return v, true
	}

	typ := str("type")
	if f == OpenCode {
		s.URL = str("url")
		s.Headers = strMap("headers")
		s.Env = strMap("environment")
		if enabled, ok := boolean("enabled"); ok && !enabled {
			s.Disabled = true
		}
		switch typ {
		case "local":
			cmd := strs("command")
			if len(cmd) == 0 {
				errs = append(errs, errors.New("command: a local server needs a command array"))
			} else {
				s.Command, s.Args = cmd[0], cmd[1:]
			}
			s.Transport = "stdio"
		case "remote":
			s.Transport = transportForURL(s.URL)
		default:
			errs = append(errs, fmt.Errorf("type: %q is not local or remote", typ))
		}
	} else {
		s.Command = str("command")
		s.Args = strs("args")
		s.Env = strMap("env")
		s.Cwd = str("cwd")
		s.URL = str("url")
		s.Headers = strMap("headers")
		if d, _ := boolean("disabled"); d {
			s.Disabled = true
		}
		if t := str("transport"); typ == "" {
			typ = t
		}
		if f == Gemini {
			s.Excluded = strs("excludeTools")
			// Gemini CLI: httpUrl is streamable HTTP, url is SSE.
			if u := str("httpUrl"); u != "" {
				s.URL, typ = u, "http"
			} else if s.URL != "" && typ == "" {
				typ = "sse"
			}
		}
		switch strings.ToLower(typ) {
		case "":
			if s.URL != "" {
				s.Transport = transportForURL(s.URL)
				if s.Transport == "sse" {
					notes = append(notes, fmt.Sprintf("%s: url ends in /sse and no type is given: imported as legacy SSE (set transport: http in the mcpwarden config if it is streamable HTTP)", name))
				}
			} else {
				s.Transport = "stdio"
			}
		case "stdio":
			s.Transport = "stdio"
		case "http", "streamable-http", "streamablehttp", "streamable_http":
			s.Transport = "http"
		case "sse":
			s.Transport = "sse"
		default:
			errs = append(errs, fmt.Errorf("type: %q is not stdio, http or sse", typ))
		}
	}
	if s.Transport == "stdio" && s.Command == "" {
		errs = append(errs, errors.New("command: required for a stdio server"))
	}
	if s.Transport != "stdio" && s.URL == "" {
		errs = append(errs, errors.New("url: required for a remote server"))
	}
	var unknown []string
	for k := range e {
		if !slices.Contains(knownKeys[f], k) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		what := "not imported"
		switch k {
		case "envFile":
			what = "not imported: mcpwarden reads no env files; put the variables in the environment mcpwarden runs in"
		case "oauth", "auth":
			what = "not imported: mcpwarden does not run OAuth for upstreams; use a token in headers"
		}
		notes = append(notes, fmt.Sprintf("%s: key %q %s", name, k, what))
	}
	return s, notes, errors.Join(errs...)
}

// transportForURL is "sse" for a URL whose path ends in /sse, else "http".
func transportForURL(u string) string {
	path, _, _ := strings.Cut(u, "?")
	if strings.HasSuffix(strings.TrimSuffix(path, "/"), "/sse") {
		return "sse"
	}
	return "http"
}

// projectServers notes the project-scoped servers of ~/.claude.json, which
// are not imported.
func projectServers(raw json.RawMessage) []string {
	if raw == nil {
		return nil
	}
	var projects map[string]struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
	}
	if json.Unmarshal(raw, &projects) != nil {
		return nil
	}
	var notes []string
	for _, dir := range sortedKeys(projects) {
		if n := len(projects[dir].MCPServers); n > 0 {
			notes = append(notes, fmt.Sprintf("projects[%q] has %d project-scoped MCP servers, not imported: only the top-level mcpServers are (run claude mcp list in that project to see them)", dir, n))
		}
	}
	return notes
}

func sortedKeys[M ~map[string]V, V any](m M) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
