package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/mcpwarden/mcpwarden/internal/hostport"
	"github.com/mcpwarden/mcpwarden/rules"
)

// Validate checks the config as a whole and returns every problem found,
// each naming its key. It compiles the policy to check it, so a bad rule is
// caught here too.
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if c.Listen != "" && c.Listen != ListenStdio {
		host, port, err := net.SplitHostPort(c.Listen)
		if err != nil {
			add("listen: %q is neither %q nor host:port (%v); write e.g. listen: 127.0.0.1:8765, or listen: stdio", c.Listen, ListenStdio, err)
		} else if n, err := strconv.Atoi(port); err == nil && (n < 0 || n > 65535) {
			add("listen: %q: port %d is not one from 0 to 65535; write e.g. listen: 127.0.0.1:8765", c.Listen, n)
		} else if !hostport.IsLoopback(host) && c.Auth.BearerTokenEnv == "" && !c.profilesHaveTokens() && c.Auth.OAuth == nil {
			add("listen: %q is not a loopback address, so auth.oauth, auth.bearer_token_env or profiles with tokens are required", c.Listen)
		} else if entry, ok := hostport.ListenHost(host); ok {
			if _, err := hostport.ParsePattern(entry); err != nil {
				add("listen: %q: the listener's host is not one a Host header can name: %v", c.Listen, err)
			}
		}
	}
	errs = append(errs, c.HTTP.validate()...)
	if c.StartupWait < 0 {
		add("startup_wait: %s is negative", c.StartupWait)
	}
	if c.MaxInflightMB < 0 {
		add("max_inflight_mb: %d is negative", c.MaxInflightMB)
	}
	if c.Ask.Timeout < 0 {
		add("ask.timeout: must not be negative")
	}
	errs = append(errs, c.Ask.validate()...)
	switch c.Log.Level {
	case "", "debug", "info", "warn", "error":
	default:
		add("log.level: %q is not one of debug, info, warn, error", c.Log.Level)
	}
	switch c.Log.Format {
	case "", "text", "json":
	default:
		add("log.format: %q is not one of text, json", c.Log.Format)
	}
	if sep := c.Naming.Separator; sep != "" && !rules.WireSafe(sep) {
		add("naming.separator: %q may only hold letters, digits, _ and -", sep)
	}
	if len(c.Servers) == 0 {
		add("servers: no upstream servers configured; add at least one under servers:")
	}
	for _, name := range c.ServerNames() {
		errs = append(errs, c.Servers[name].validate(name)...)
	}
	errs = append(errs, c.validateSandbox(c.OwnFiles(os.Getenv))...)
	errs = append(errs, c.validateProfiles()...)
	errs = append(errs, c.validateOAuth()...)
	errs = append(errs, c.State.validate()...)
	errs = append(errs, c.validateReplica()...)
	if !c.Pin.OnToolChange.Valid() {
		add("pin.on_tool_change: %q is not one of warn, ask, deny, hide", c.Pin.OnToolChange)
	}
	if err := c.PathsCaseInsensitive.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Audit.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Telemetry.Validate(); err != nil {
		errs = append(errs, err)
	}
	spec := c.RulesSpec()
	for name := range spec.Servers {
		if !rules.ValidServerName(name) {
			delete(spec.Servers, name) // said above, with its place and the name to write
		}
	}
	if _, err := rules.Compile(spec); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (s Server) validate(name string) []error {
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("servers.%s"+format, append([]any{name}, args...)...))
	}
	if !rules.ValidServerName(name) {
		key := "servers." + name
		errs = append(errs, &keyError{key: key, err: fmt.Errorf("%s: %q is not a server name (lower-case letters, digits, _ and -, at most 32, starting with a letter or digit); write %s", key, name, rules.ServerNameFor(name))})
	}
	switch s.EffectiveTransport() {
	case TransportStdio:
		if s.Command == "" {
			add(".command: required for a stdio server (or set url for a remote one)")
		}
		if s.URL != "" {
			add(".url: a stdio server has a command, not a url; drop one of them")
		}
		if len(s.Headers) > 0 {
			add(".headers: only remote (url) servers take headers")
		}
	case TransportHTTP, TransportSSE:
		if s.Command != "" || len(s.Args) > 0 || len(s.Env) > 0 || s.Cwd != "" {
			add(": a remote server (url) takes no command, args, env or cwd")
		}
		u, err := url.Parse(s.URL)
		switch {
		case s.URL == "":
			add(".url: required for transport %q", s.EffectiveTransport())
		case err != nil:
			add(".url: %v", err)
		case u.Scheme != "http" && u.Scheme != "https":
			add(".url: %q must start with http:// or https://", s.URL)
		}
	default:
		add(".transport: %q is not one of stdio, http, sse%s", s.Transport, meant(s.Transport, []string{TransportStdio, TransportHTTP, TransportSSE}))
	}
	for _, err := range s.validateOAuth() {
		add("%v", err)
	}
	if s.PathRoot != "" && !filepath.IsAbs(s.PathRoot) {
		add(".path_root: %q must be an absolute path", s.PathRoot)
	}
	if s.PathHome != "" && !filepath.IsAbs(s.PathHome) {
		add(".path_home: %q must be an absolute path", s.PathHome)
	}
	if s.InitTimeout < 0 {
		add(".init_timeout: must not be negative")
	}
	if s.CallTimeout < 0 {
		add(".call_timeout: must not be negative")
	}
	if s.MaxResultBytes < 0 {
		add(".max_result_bytes: must not be negative")
	}
	if s.MaxConcurrentCalls < 0 {
		add(".max_concurrent_calls: must not be negative")
	}
	if s.MaxQueuedCalls < 0 {
		add(".max_queued_calls: must not be negative")
	}
	errs = append(errs, s.validateIsolation(name)...)
	if !s.OnToolChange.Valid() {
		add(".on_tool_change: %q is not one of warn, ask, deny, hide", s.OnToolChange)
	}
	for tool, alias := range s.Aliases {
		if !rules.ValidWireName(alias) {
			add(".aliases.%s: %q must match %s", tool, alias, rules.WireNameGrammar)
		}
	}
	return errs
}

func (a Ask) validate() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch a.Approvals {
	case "", ApprovalsOff, ApprovalsLocal:
	default:
		add("ask.approvals: %q is not one of local, off", a.Approvals)
	}
	if a.ApprovalsListen != "" {
		host, _, err := net.SplitHostPort(a.ApprovalsListen)
		if err != nil {
			add("ask.approvals_listen: %q is not host:port (%v)", a.ApprovalsListen, err)
		} else if !hostport.IsLoopback(host) {
			add("ask.approvals_listen: %q must be a loopback address: the approvals page is for the local user only", a.ApprovalsListen)
		}
	}
	r := a.Resolver
	if len(r.Command) > 0 && r.URL != "" {
		add("ask.resolver: set command or url, not both")
	}
	if len(r.Command) > 0 && r.Command[0] == "" {
		add("ask.resolver.command: the program must not be empty")
	}
	if r.URL != "" {
		u, err := url.Parse(r.URL)
		switch {
		case err != nil:
			add("ask.resolver.url: %v", err)
		case u.Scheme == "https":
		case u.Scheme == "http" && hostport.IsLoopback(u.Hostname()):
		default:
			add("ask.resolver.url: %q must be https (or http on a loopback address): it carries the asks and their answers", r.URL)
		}
		if r.SecretEnv == "" {
			add("ask.resolver.secret_env: required with ask.resolver.url, to sign the requests")
		}
	}
	if r.Timeout < 0 {
		add("ask.resolver.timeout: must not be negative")
	}
	return errs
}

// validate checks the HTTP listener's settings as the listener's guard
// parses them (package hostport): hosts are names or name:port, origins
// are scheme://host[:port] with nothing after.
func (h HTTP) validate() []error {
	var errs []error
	for i, host := range h.AllowedHosts {
		if _, err := hostport.ParsePattern(host); err != nil {
			errs = append(errs, fmt.Errorf("http.allowed_hosts[%d]: %q must be a host name or name:port: %w", i, host, err))
		}
	}
	for i, origin := range h.AllowedOrigins {
		if _, err := hostport.NormalizeOrigin(origin); err != nil {
			errs = append(errs, fmt.Errorf("http.allowed_origins[%d]: %q must be an origin such as https://app.example.com: %w", i, origin, err))
		}
	}
	if h.MaxBodyBytes < 0 {
		errs = append(errs, errors.New("http.max_body_bytes: must not be negative"))
	}
	if h.SessionIdleTimeout < 0 {
		errs = append(errs, errors.New("http.session_idle_timeout: must not be negative"))
	}
	if h.MaxSessions < 0 {
		errs = append(errs, errors.New("http.max_sessions: must not be negative"))
	}
	if h.MaxSessionsPerPrincipal < 0 {
		errs = append(errs, errors.New("http.max_sessions_per_principal: must not be negative"))
	}
	return errs
}

// ServerNames returns the configured server names, sorted.
func (c *Config) ServerNames() []string {
	names := make([]string, 0, len(c.Servers))
	for name := range c.Servers {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Root is the directory relative path arguments to the server are joined
// to: its cwd for a stdio server (the directory mcpwarden runs in when none
// is set), its path_root for a remote one ("" when none is set).
func (c *Config) Root(name, workDir string) string {
	s := c.Servers[name]
	if s.EffectiveTransport() != TransportStdio {
		return s.PathRoot
	}
	return c.ServerDir(name, workDir)
}

// ServerDir is the directory a stdio server runs in: its cwd, relative to
// the config file's directory, or workDir when cwd is not set.
func (c *Config) ServerDir(name, workDir string) string {
	cwd := c.Servers[name].Cwd
	switch {
	case cwd == "":
		return workDir
	case filepath.IsAbs(cwd):
		return filepath.Clean(cwd)
	case c.Dir != "":
		return filepath.Join(c.Dir, cwd)
	default:
		return filepath.Join(workDir, cwd)
	}
}

// RulesSpec gathers the policy gates for rules.Compile. Relative stdio roots
// are resolved against the config's directory.
func (c *Config) RulesSpec() rules.Spec {
	return c.RulesSpecIn("")
}

// RulesSpecIn is RulesSpec with workDir as the directory mcpwarden runs in,
// used as the root of stdio servers without a cwd. It reads the
// filesystem to find the directories stdio servers are given (ExtraRoots).
func (c *Config) RulesSpecIn(workDir string) rules.Spec {
	base := c.Dir
	if base == "" {
		base = workDir
	}
	spec := rules.Spec{
		Global:               workspaceIn(c.Policy, base),
		Profiles:             c.profileSpecs(),
		Enforce:              c.Enforce,
		ProfileEnforce:       c.profileEnforce(),
		Servers:              make(map[string]rules.ServerSpec, len(c.Servers)),
		PathKeys:             c.PathKeys,
		URLKeys:              c.URLKeys,
		CommandKeys:          c.CommandKeys,
		PathsCaseInsensitive: c.foldPaths(),
		// mcpwarden's own files are off limits to servers on this machine.
		Protected:           c.OwnFiles(os.Getenv),
		Labels:              c.Labels,
		Flow:                c.Flow,
		Results:             c.Results,
		Limits:              c.Limits,
		HideSuspiciousTools: c.HideSuspiciousTools,
	}
	for name, p := range spec.Profiles {
		spec.Profiles[name] = workspaceIn(p, base)
	}
	for name, s := range c.Servers {
		spec.Servers[name] = rules.ServerSpec{
			Policy:     workspaceIn(s.Policy, base),
			Root:       c.Root(name, workDir),
			ExtraRoots: c.ExtraRoots(name, workDir),
			Home:       c.Home(name),
			Local:      s.onThisMachine(),
			Results:    s.Results,
			Enforce:    s.Enforce,
		}
	}
	return spec
}

// workspaceIn returns p with its relative workspace directories joined to
// base (the config file's directory), as relative cwd values are; with no
// base they stay relative and Compile reports them.
func workspaceIn(p rules.PolicySpec, base string) rules.PolicySpec {
	if base == "" || !slices.ContainsFunc(p.Workspace, func(d string) bool { return !filepath.IsAbs(d) }) {
		return p
	}
	ws := make([]string, len(p.Workspace))
	for i, d := range p.Workspace {
		if !filepath.IsAbs(d) {
			d = filepath.Join(base, d)
		}
		ws[i] = d
	}
	p.Workspace = ws
	return p
}
