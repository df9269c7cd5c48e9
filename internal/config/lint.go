package config

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"

	"github.com/mcpwarden/mcpwarden/internal/spelling"
	"github.com/mcpwarden/mcpwarden/rules"
)

// A Warning is something the config allows that is likely not what was
// meant: a setting with no effect, a value taken literally, a name that
// matches nothing. Key names it as written (policy.outside_workspace),
// Place is "config FILE:LINE:COL" where the key is found, and Message says
// what happens and what to write instead.
type Warning struct {
	Key     string `json:"key"`
	Place   string `json:"place"`
	Message string `json:"message"`
}

// String is the warning as one line: place, key and message.
func (w Warning) String() string {
	return fmt.Sprintf("%s: %s: %s", w.Place, w.Key, w.Message)
}

// Lint returns the config's warnings, by key: an outside_workspace with
// no workspace (it decides nothing), a ${VAR} in a server's args, command,
// cwd or url (only env and headers are expanded), a $VAR without braces in
// env or headers (only ${VAR} is), a command holding its arguments, an
// allow of mcp:*:* (every tool of every server, and any added later), a
// rule or profile naming a server the config does not have, and a stdio
// server's cwd that does not exist (the server cannot start there). It is
// for c as loaded; validate --strict makes warnings errors.
func (c *Config) Lint() []Warning {
	var ws []Warning
	add := func(key, format string, args ...any) {
		ws = append(ws, Warning{Key: key, Message: fmt.Sprintf(format, args...)})
	}
	names := c.ServerNames()
	gates := []gateSpec{{"policy", c.Policy, true}}
	for _, n := range names {
		gates = append(gates, gateSpec{"servers." + n + ".policy", c.Servers[n].Policy, false})
	}
	for _, n := range slices.Sorted(maps.Keys(c.Profiles)) {
		gates = append(gates, gateSpec{"profiles." + n + ".policy", c.Profiles[n].Policy, true})
		for i, glob := range c.Profiles[n].Servers {
			if !namesAServer(glob, names) {
				add(fmt.Sprintf("profiles.%s.servers[%d]", n, i), "%q names no server in the config, so it gives the profile none%s", glob, meant(glob, names))
			}
		}
	}
	for _, g := range gates {
		if g.p.OutsideWorkspace != "" && len(g.p.Workspace) == 0 && !g.p.WorkspaceFromRoots {
			add(g.key+".outside_workspace", "has no effect without %s.workspace: no path is outside a workspace that is not set, so every path is decided by the rules alone; add workspace: [/path/to/project] (or workspace_from_roots: true), or drop outside_workspace", g.key)
		}
		for _, list := range []struct {
			name  string
			rules []string
		}{{"deny", g.p.Deny}, {"ask", g.p.Ask}, {"allow", g.p.Allow}} {
			for i, r := range list.rules {
				key := fmt.Sprintf("%s.%s[%d]", g.key, list.name, i)
				server, rest, ok := ruleServer(r)
				switch {
				case !ok:
				case list.name == "allow" && g.everyServer && server == "*" && strings.Trim(rest, "*") == "":
					add(key, "%q allows every tool of every server, including tools a server adds later; allow what is meant: a server's tools (mcp:fs:*) or a tool (mcp:fs:read_text_file), or set default: allow to say so", r)
				case !namesAServer(server, names):
					add(key, "%q names server %q, which the config does not have (servers: %s), so the rule never matches%s", r, server, strings.Join(names, ", "), meant(server, names))
				}
			}
		}
	}
	for _, n := range names {
		s := c.Servers[n]
		literal := map[string]string{"command": s.Command, "cwd": s.Cwd, "url": s.URL}
		for i, a := range s.Args {
			literal[fmt.Sprintf("args[%d]", i)] = a
		}
		for _, k := range slices.Sorted(maps.Keys(literal)) {
			if m := varRef.FindString(literal[k]); m != "" {
				add("servers."+n+"."+k, "%s is used as written: ${VAR} is expanded only in env and headers; write the value, or for args set it in env (env: {%s: %s}) for the server to read", m, m[2:len(m)-1], m)
			}
		}
		expanded := map[string]string{}
		for k, v := range s.Env {
			expanded["env."+k] = v
		}
		for k, v := range s.Headers {
			expanded["headers."+k] = v
		}
		for _, k := range slices.Sorted(maps.Keys(expanded)) {
			if m := bareVarRef.FindStringSubmatch(expanded[k]); m != nil {
				add("servers."+n+"."+k, "$%s is used as written: only the braced form is expanded; write ${%s}", m[1], m[1])
			}
		}
		if s.EffectiveTransport() == TransportStdio && strings.ContainsAny(strings.TrimSpace(s.Command), " \t") {
			if _, err := exec.LookPath(s.Command); err != nil {
				words := strings.Fields(s.Command)
				add("servers."+n+".command", "%q is run as one program's name, spaces and all, and there is no such file; give the program alone and its arguments as a list: command: %s, args: [%s]", s.Command, words[0], strings.Join(words[1:], ", "))
			}
		}
		if s.EffectiveTransport() == TransportStdio && s.Cwd != "" {
			dir := c.ServerDir(n, "")
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				add("servers."+n+".cwd", "%q is not a directory here, so %s cannot start in it; create it or correct cwd", dir, n)
			}
		}
	}
	for i := range ws {
		ws[i].Place = c.placeOf(ws[i].Key)
	}
	return ws
}

// bareVarRef matches $VAR written without braces, which is not expanded,
// where it reads as meant to be: the whole value, or after a space (as in
// "Bearer $TOKEN").
var bareVarRef = regexp.MustCompile(`(?:^|\s)\$([A-Za-z_][A-Za-z0-9_]*)\b`)

// A gateSpec is a gate's policy and the key it is written under;
// everyServer is set for a gate whose rules may reach any server's tools
// (not a server's own).
type gateSpec struct {
	key         string
	p           rules.PolicySpec
	everyServer bool
}

// Origin is where key was set, followed by the key, as errors name it:
// "config FILE:LINE:COL: servers.fs.cwd", or "environment variable
// MCPWARDEN_SERVERS__FS__CWD: servers.fs.cwd" when a variable set it.
func (c *Config) Origin(key string) string {
	if variable, _ := c.envSources.of(key); variable != "" {
		return "environment variable " + variable + ": " + key
	}
	return c.placeOf(key) + ": " + key
}

// placeOf is "config FILE:LINE:COL" for key, as errors name it.
func (c *Config) placeOf(key string) string {
	src := c.source
	if src.name == "" {
		src.name = "config " + c.File
	}
	if src.text == nil {
		return src.name
	}
	return src.place(keyPos(src.text, src.ext, key))
}

// ruleServer splits rule r, mcp:<server>:<rest>, where rest is the tool
// and any conditions; ok is false if r has no server part.
func ruleServer(r string) (server, rest string, ok bool) {
	tail, ok := strings.CutPrefix(r, "mcp:")
	if !ok {
		return "", "", false
	}
	server, rest, ok = strings.Cut(tail, ":")
	return server, rest, ok && server != ""
}

// namesAServer reports whether glob matches one of names.
func namesAServer(glob string, names []string) bool {
	return slices.ContainsFunc(names, func(n string) bool { return matchesAny([]string{glob}, n) })
}

// meant is "; did you mean X?" for the name spelt closest to s, "" if none.
func meant(s string, names []string) string {
	if m := spelling.Closest(s, names); m != "" {
		return fmt.Sprintf("; did you mean %q?", m)
	}
	return ""
}
