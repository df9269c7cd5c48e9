package clientconfig

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/mcpwarden/mcpwarden/rules"
)

// ErrNothingToImport is returned by Convert when the client config has no
// server that is not disabled or already mcpwarden.
var ErrNothingToImport = errors.New("no MCP servers to import")

// Options tune Convert. The zero value is usable.
type Options struct {
	// SourceName names the client file in the generated config's header
	// comment ("" = not named).
	SourceName string
	// WorkspaceDir replaces ${workspaceFolder} (VS Code, Cursor) in args,
	// env, headers and cwd; "" leaves it as written, with a note.
	WorkspaceDir string
	// Home replaces ${userHome}; "" leaves it as written, with a note.
	Home string
	// ProjectDir is the project the client config belongs to: the
	// directory servers on this machine are confined to when no filesystem
	// server names its own ("" = none known).
	ProjectDir string
	// Workspace, if set, is the directories every server on this machine
	// is confined to, in place of the filesystem servers' directories and
	// ProjectDir (import --workspace).
	Workspace []string
}

// A Var is an environment variable the generated config references and
// mcpwarden therefore needs when it starts.
type Var struct {
	// Name is the variable's name.
	Name string `json:"name"`
	// Where lists the config keys that reference it
	// ("servers.github.env.GITHUB_TOKEN").
	Where []string `json:"where"`
	// Secret is the literal value the client config held, which the
	// generated config replaced with ${Name}; "" if it held a reference.
	// It is never written to the generated config.
	Secret string `json:"-"`
	// ClientRef is a client-side reference that supplies the value (VS Code
	// "${input:github_token}"), to be passed to mcpwarden in its entry's env.
	ClientRef string `json:"client_ref,omitempty"`
	// Unexpanded is set when a reference sits where mcpwarden expands no
	// variables (command, args, cwd, url): setting the variable does not
	// help there, the config needs fixing by hand (Result.Notes say how).
	Unexpanded bool `json:"unexpanded,omitempty"`
	// Optional is set when every reference gives a default
	// (${VAR:-default}), kept as written: mcpwarden starts without it.
	Optional bool `json:"optional,omitempty"`
}

// A Result is a converted client config.
type Result struct {
	// Config is the mcpwarden config, YAML.
	Config []byte
	// Names maps each imported client entry name to its mcpwarden server key.
	Names map[string]string
	// Vars are the environment variables Config references, by name.
	Vars []Var
	// Rules are the mcpwarden rules converted from Claude Code permissions.
	Rules Permissions
	// Skipped are the permission entries that were not converted (Bash(...),
	// Read(...), ...).
	Skipped []string
	// Workspace is the directories the servers on this machine that are
	// not filesystem servers are confined to (a filesystem server is
	// confined to the directories it was given); a path outside is decided
	// OutsideWorkspace.
	Workspace []string
	// Notes say what was renamed, dropped or needs attention, one sentence
	// each.
	Notes []string
}

// ServerKey converts a client entry name into a valid mcpwarden server key
// (rules.ServerNameFor).
func ServerKey(name string) string { return rules.ServerNameFor(name) }

// converter holds the state of one Convert.
type converter struct {
	f     Format
	opts  Options
	notes []string
	vars  map[string]*Var
	// required are the variables referenced at least once without a default.
	required map[string]bool
}

func (c *converter) notef(format string, args ...any) {
	c.notes = append(c.notes, fmt.Sprintf(format, args...))
}

// Convert turns a parsed client config into an mcpwarden config: every
// enabled server, under a valid key, with env values and headers passed
// through, references converted to mcpwarden's ${VAR} form and literal
// secrets replaced by ${VAR} references (see Result.Vars); every server on
// this machine confined to a workspace (see Result.Workspace); and a safe
// starting policy: default ask, secret files denied, plus the Claude Code
// permissions of src converted into rules. Entries that already launch
// mcpwarden are skipped. Convert does not validate the result; the caller
// loads it with config.Parse.
func Convert(src *Source, opts *Options) (*Result, error) {
	c := &converter{f: src.Format, vars: map[string]*Var{}, required: map[string]bool{}}
	if opts != nil {
		c.opts = *opts
	}
	c.notes = append(c.notes, src.Notes...)
	res := &Result{Names: map[string]string{}}
	used := map[string]bool{}
	var servers []server
	for _, s := range src.Servers {
		switch {
		case s.Disabled:
			c.notef("%s: disabled in the client, not imported", s.Name)
			continue
		case isMCPWarden(s):
			c.notef("%s: already runs mcpwarden, not imported", s.Name)
			continue
		}
		base := ServerKey(s.Name)
		key := base
		for i := 2; used[key]; i++ {
			suffix := fmt.Sprintf("-%d", i)
			key = base[:min(len(base), 32-len(suffix))] + suffix
		}
		used[key] = true
		if key != s.Name {
			c.notef("%s: %q is not a valid mcpwarden server name (%s), imported as %q; its tools are mcp:%s:<tool>", s.Name, s.Name, rules.ServerNameGrammar, key, key)
		}
		res.Names[s.Name] = key
		servers = append(servers, c.server(key, s))
	}
	if len(servers) == 0 {
		return nil, ErrNothingToImport
	}
	res.Workspace = c.confine(servers)
	res.Rules, res.Skipped = c.permissions(src.Permissions, res.Names)
	for _, s := range src.Servers {
		for _, tool := range s.Excluded {
			key, imported := res.Names[s.Name]
			r := "mcp:" + key + ":" + tool
			if !imported || strings.ContainsAny(tool, ":()*?[]{}") || slices.Contains(res.Rules.Deny, r) {
				continue
			}
			res.Rules.Deny = append(res.Rules.Deny, r)
			c.notef("%s: the client excludes the tool %q: denied (%s)", s.Name, tool, r)
		}
	}
	for _, name := range sortedKeys(c.vars) {
		v := *c.vars[name]
		v.Optional = !c.required[name]
		res.Vars = append(res.Vars, v)
	}
	res.Config = render(c.opts.SourceName, src.Format, servers, res.Rules, res.Vars)
	res.Notes = c.notes
	return res, nil
}

// isMCPWarden reports whether the entry launches mcpwarden itself.
func isMCPWarden(s Server) bool {
	base := strings.TrimSuffix(path.Base(strings.ReplaceAll(s.Command, `\`, "/")), ".exe")
	return base == "mcpwarden" || (s.Command == "go" && slices.ContainsFunc(s.Args, func(a string) bool { return strings.Contains(a, "cmd/mcpwarden") }))
}

// A server is one converted server, ready to render.
type server struct {
	key     string
	command string
	args    []string
	env     [][2]string // sorted by key
	cwd     string
	url     string
	trans   string
	headers [][2]string
	// workspace is what the server's paths are confined to (nil: none).
	workspace []string
}

func (c *converter) server(key string, s Server) server {
	out := server{key: key, command: s.Command, url: s.URL, trans: s.Transport}
	where := "servers." + key
	out.command = c.literal(where+".command", s.Command)
	for i, a := range s.Args {
		out.args = append(out.args, c.literal(fmt.Sprintf("%s.args[%d]", where, i), a))
	}
	c.argSecrets(key, out.args)
	out.cwd = c.literal(where+".cwd", s.Cwd)
	out.url = c.urlSecrets(key, c.literal(where+".url", s.URL))
	for _, k := range sortedKeys(s.Env) {
		w := where + ".env." + k
		out.env = append(out.env, [2]string{k, c.secret(w, key, k, c.expanded(w, s.Env[k]), false)})
	}
	for _, k := range sortedKeys(s.Headers) {
		w := where + ".headers." + k
		out.headers = append(out.headers, [2]string{k, c.secret(w, key, k, c.expanded(w, s.Headers[k]), true)})
	}
	return out
}

// refPattern matches ${...} references; openCodeRef matches OpenCode's
// {env:VAR} and {file:path}.
var (
	refPattern   = regexp.MustCompile(`\$\{([^}]*)\}`)
	openCodeRef  = regexp.MustCompile(`\{(env|file):([^}]*)\}`)
	envName      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	upperEnvName = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)
	// bareRef matches Gemini CLI's unbraced $VAR, in env and headers.
	bareRef = regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)`)
)

// expanded converts the client's references in a value that mcpwarden
// expands (env, headers) into mcpwarden's ${VAR} form and records the
// variables.
func (c *converter) expanded(where, v string) string {
	return c.refs(where, v, true)
}

// literal converts references in a value that mcpwarden does not expand
// (command, args, cwd, url): workspace and home placeholders are filled in,
// variable references are noted.
func (c *converter) literal(where, v string) string {
	return c.refs(where, v, false)
}

func (c *converter) refs(where, v string, expands bool) string {
	if c.f == OpenCode {
		v = openCodeRef.ReplaceAllStringFunc(v, func(m string) string {
			sub := openCodeRef.FindStringSubmatch(m)
			if sub[1] == "env" {
				return "${" + sub[2] + "}"
			}
			name := varName(strings.TrimSuffix(path.Base(sub[2]), path.Ext(sub[2])))
			c.notef("%s: OpenCode reads {file:%s}; mcpwarden reads no files: set %s to that file's content", where, sub[2], name)
			return "${" + name + "}"
		})
	}
	if c.f == Gemini && expands {
		// Gemini CLI expands $VAR where mcpwarden expands ${VAR}.
		v = bareRef.ReplaceAllString(v, "$${$1}")
	}
	return refPattern.ReplaceAllStringFunc(v, func(m string) string {
		ref := m[2 : len(m)-1]
		switch {
		case ref == "workspaceFolder" && c.opts.WorkspaceDir != "":
			return c.opts.WorkspaceDir
		case ref == "userHome" && c.opts.Home != "":
			return c.opts.Home
		case ref == "pathSeparator":
			return "/"
		}
		name, client, def := ref, "", ""
		switch {
		case strings.HasPrefix(ref, "env:"):
			name = strings.TrimPrefix(ref, "env:")
		case strings.HasPrefix(ref, "input:"):
			name, client = varName(strings.TrimPrefix(ref, "input:")), m
		case strings.Contains(ref, ":-"):
			// mcpwarden expands ${VAR:-default} as the client does: kept.
			name, def, _ = strings.Cut(ref, ":-")
			def = ":-" + def
		}
		if !envName.MatchString(name) {
			c.notef("%s: the client placeholder %s has no mcpwarden equivalent and is kept as written; replace it", where, m)
			return m
		}
		if !expands {
			c.notef("%s: mcpwarden does not expand ${%s} here (only in env and headers): replace it with the value, or pass it through env", where, name)
		}
		wasRequired := c.required[name]
		c.use(name, where, "", client)
		if def != "" && expands {
			c.required[name] = wasRequired // this reference needs no value
		}
		return "${" + name + def + "}"
	})
}

// use records that where references the variable name.
func (c *converter) use(name, where, secret, client string) {
	v := c.vars[name]
	if v == nil {
		v = &Var{Name: name}
		c.vars[name] = v
	}
	v.Where = append(v.Where, where)
	c.required[name] = true
	if !strings.Contains(where, ".env.") && !strings.Contains(where, ".headers.") {
		v.Unexpanded = true
	}
	if secret != "" {
		v.Secret = secret
	}
	if client != "" {
		v.ClientRef = client
	}
}

// PassedVars are the variables the config takes from the environment the
// client runs in, as the client config did: a client that passes its
// environment on gives them to mcpwarden as they are, Codex only those its
// entry names in env_vars (Entry.PassEnv).
func PassedVars(vars []Var) []string {
	var names []string
	for _, v := range vars {
		if v.Secret == "" && v.ClientRef == "" && !v.Unexpanded {
			names = append(names, v.Name)
		}
	}
	return names
}

// EntryEnv is the env of the client's mcpwarden entry: the variables a
// client-side reference supplies (VS Code ${input:...}), and, with
// secrets, the literal secrets the client config held, so that a client
// that does not pass its own environment on (Claude Desktop started from
// the dock) can still start mcpwarden. nil when there is nothing to pass.
func EntryEnv(vars []Var, secrets bool) map[string]string {
	var env map[string]string
	for _, v := range vars {
		if v.Unexpanded {
			continue // mcpwarden would not read it
		}
		val := v.ClientRef
		if val == "" && secrets {
			val = v.Secret
		}
		if val == "" {
			continue
		}
		if env == nil {
			env = map[string]string{}
		}
		env[v.Name] = val
	}
	return env
}
