package clientconfig

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/knadh/koanf/parsers/toml/v2"
)

// codexKey is the top-level table of Codex's config.toml that holds the
// MCP servers: [mcp_servers.<name>].
const codexKey = "mcp_servers"

// codexToolTimeout is the tool_timeout_sec of the entry import writes:
// longer than an ask waits by default (config.DefaultAskTimeout, 60s, which
// is also Codex's default), so that mcpwarden's refusal, which says why,
// reaches Codex before Codex gives up on the call.
const codexToolTimeout = 120

// parseCodex reads the [mcp_servers.<name>] tables of a Codex config.toml,
// in name order (a TOML table has no order mcpwarden could keep).
func parseCodex(data []byte) (*Source, error) {
	top, err := toml.Parser().Unmarshal(data)
	if err != nil {
		return nil, fmt.Errorf("parsing TOML: %w", err)
	}
	src := &Source{Format: Codex}
	raw, ok := top[codexKey]
	if !ok {
		return nil, fmt.Errorf("no [%s.<name>] table: not a Codex MCP config", codexKey)
	}
	servers, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: want a table of servers", codexKey)
	}
	for _, name := range sortedKeys(servers) {
		e, ok := servers[name].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s.%s: not a table", codexKey, name)
		}
		s, notes, err := parseCodexEntry(name, e)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", codexKey, name, err)
		}
		src.Servers = append(src.Servers, s)
		src.Notes = append(src.Notes, notes...)
	}
	return src, nil
}

// codexKnownKeys are the entry keys parseCodexEntry reads.
var codexKnownKeys = []string{"command", "args", "env", "env_vars", "cwd", "url", "bearer_token_env_var", "http_headers", "env_http_headers", "enabled", "disabled_tools"}

func parseCodexEntry(name string, e map[string]any) (Server, []string, error) {
	s := Server{Name: name}
	var errs []error
	str := func(key string) string {
		v, ok := e[key]
		if !ok {
			return ""
		}
		out, ok := v.(string)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: want a string", key))
		}
		return out
	}
	strs := func(key string) []string {
		v, ok := e[key]
		if !ok {
			return nil
		}
		items, _ := v.([]any)
		out := make([]string, 0, len(items))
		for _, it := range items {
			x, ok := it.(string)
			if !ok {
				errs = append(errs, fmt.Errorf("%s: want an array of strings", key))
				return nil
			}
			out = append(out, x)
		}
		if items == nil {
			errs = append(errs, fmt.Errorf("%s: want an array of strings", key))
		}
		return out
	}
	table := func(key string) map[string]string {
		v, ok := e[key]
		if !ok {
			return nil
		}
		m, ok := v.(map[string]any)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: want a table", key))
			return nil
		}
		out, bad := scalarStrings(key, m)
		errs = append(errs, bad...)
		return out
	}
	s.Command = str("command")
	s.Args = strs("args")
	s.Env = table("env")
	s.Cwd = str("cwd")
	s.URL = str("url")
	s.Headers = table("http_headers")
	s.Excluded = strs("disabled_tools")
	if v, ok := e["enabled"]; ok {
		b, isBool := v.(bool)
		if !isBool {
			errs = append(errs, errors.New("enabled: want true or false"))
		}
		s.Disabled = isBool && !b
	}
	// Codex passes these variables of its own environment on to the server.
	for _, v := range strs("env_vars") {
		if s.Env == nil {
			s.Env = map[string]string{}
		}
		if _, set := s.Env[v]; !set {
			s.Env[v] = "${" + v + "}"
		}
	}
	setHeader := func(h, v string) {
		if s.Headers == nil {
			s.Headers = map[string]string{}
		}
		s.Headers[h] = v
	}
	if v := str("bearer_token_env_var"); v != "" {
		setHeader("Authorization", "Bearer ${"+v+"}")
	}
	for h, v := range table("env_http_headers") {
		setHeader(h, "${"+v+"}")
	}
	switch {
	case s.URL != "":
		s.Transport = "http"
	case s.Command != "":
		s.Transport = "stdio"
	default:
		errs = append(errs, errors.New("command or url: a server needs one"))
	}
	var notes []string
	for _, k := range sortedKeys(e) {
		if !slices.Contains(codexKnownKeys, k) {
			notes = append(notes, fmt.Sprintf("%s: key %q not imported", name, k))
		}
	}
	return s, notes, errors.Join(errs...)
}

// rewriteCodex returns a Codex config.toml with its [mcp_servers.*] tables
// replaced by the entry e, appended at the end. Everything else is kept as
// written, comments too: the other tables are copied line by line. A file
// whose servers are written another way (an inline mcp_servers = {...}, or
// dotted keys in another table) is refused, as its rewrite could not be
// checked; the result is parsed back to make sure it holds e alone.
func rewriteCodex(data []byte, e Entry) ([]byte, error) {
	var out bytes.Buffer
	skipping := false
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if name, ok := tableHeader(line); ok {
			skipping = name == codexKey
		}
		if !skipping {
			out.Write(line)
		}
	}
	text := bytes.TrimRight(out.Bytes(), "\n")
	out.Reset()
	if len(text) > 0 {
		out.Write(text)
		out.WriteString("\n\n")
	}
	out.Write(codexEntry(e))
	// The rewrite must hold exactly the entry, however the file was written.
	back, err := parseCodex(out.Bytes())
	if err != nil {
		return nil, fmt.Errorf("rewriting the Codex config: %w; replace its [%s.*] tables with the snippet by hand", err, codexKey)
	}
	want := Server{Name: cmp.Or(e.Name, DefaultEntryName), Command: e.Command, Args: e.Args, Env: maps.Clone(e.Env), Transport: "stdio"}
	for _, v := range e.PassEnv {
		if want.Env == nil {
			want.Env = map[string]string{}
		}
		if _, set := want.Env[v]; !set {
			want.Env[v] = "${" + v + "}"
		}
	}
	if len(back.Servers) != 1 || !reflect.DeepEqual(back.Servers[0], want) {
		return nil, fmt.Errorf("rewriting the Codex config: its MCP servers are not all in [%s.<name>] tables; replace them with the snippet by hand", codexKey)
	}
	return out.Bytes(), nil
}

// tableHeader returns the first key of a TOML table header line ([a.b],
// [[a.b]], [ "a" . b ] # comment), unquoted; ok is false for other lines.
func tableHeader(line []byte) (string, bool) {
	t := strings.TrimSpace(string(line))
	if !strings.HasPrefix(t, "[") {
		return "", false
	}
	t = strings.TrimLeft(t, "[")
	end := strings.IndexAny(t, ".]")
	if end < 0 {
		return "", false
	}
	first := strings.TrimSpace(t[:end])
	if len(first) >= 2 && (first[0] == '"' || first[0] == '\'') && first[len(first)-1] == first[0] {
		first = first[1 : len(first)-1]
	}
	return first, true
}

// codexEntry is the [mcp_servers.<name>] table of e.
func codexEntry(e Entry) []byte {
	var b bytes.Buffer
	name := tomlKey(cmp.Or(e.Name, DefaultEntryName))
	fmt.Fprintf(&b, "[%s.%s]\n", codexKey, name)
	fmt.Fprintf(&b, "command = %s\n", quoted(e.Command))
	fmt.Fprintf(&b, "args = %s\n", flow(e.Args))
	if len(e.PassEnv) > 0 {
		fmt.Fprintf(&b, "# Codex passes on only these variables of its environment\n")
		fmt.Fprintf(&b, "env_vars = %s\n", flow(e.PassEnv))
	}
	fmt.Fprintf(&b, "# longer than mcpwarden's ask.timeout, so its answer to an ask comes first\n")
	fmt.Fprintf(&b, "tool_timeout_sec = %d\n", codexToolTimeout)
	if len(e.Env) > 0 {
		fmt.Fprintf(&b, "\n[%s.%s.env]\n", codexKey, name)
		for _, k := range sortedKeys(e.Env) {
			fmt.Fprintf(&b, "%s = %s\n", tomlKey(k), quoted(e.Env[k]))
		}
	}
	return b.Bytes()
}

// tomlKey is k bare when TOML allows it, else quoted (a JSON string is a
// TOML basic string).
func tomlKey(k string) string {
	if k != "" && strings.Trim(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == "" {
		return k
	}
	return quoted(k)
}
