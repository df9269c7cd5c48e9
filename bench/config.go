package main

import (
	"fmt"
	"strings"
)

// A policyShape is the policy part of a generated config.
type policyShape struct {
	Deny, Ask, Allow []string
}

// Len is the number of rules in p.
func (p policyShape) Len() int { return len(p.Deny) + len(p.Ask) + len(p.Allow) }

// genPolicy builds a realistic global policy of exactly n rules (n ≥ 10):
// the rules a team writes for a fleet of servers (filesystem, git, shell,
// http, databases), most of them for servers other than the measured ones,
// with argument conditions of every kind (path globs, plain globs, !=, ~=),
// plus rules on the measured servers whose conditions the benchmark's calls
// do not meet, so that evaluating them is real work. The measured tools are
// allowed by name, so calls are forwarded. The output is deterministic.
func genPolicy(n int) policyShape {
	if n < 10 {
		panic("genPolicy: n must be at least 10")
	}
	p := policyShape{
		Deny: []string{
			"mcp:*:*:path=**/.env",
			"mcp:bench:echo:message~=(?i).*(rm -rf|drop table).*",
			"mcp:everything:echo:message=*password*",
		},
		Ask: []string{
			"mcp:bench:payload:kib~=[0-9]{6,}",
			"mcp:*:write_*",
		},
		Allow: []string{
			"mcp:bench:echo",
			"mcp:bench:payload",
			"mcp:everything:echo",
			"mcp:bench-http:*",
			"mcp:everything:get-sum",
		},
	}
	// Each kind of rule is a format of the server's number (i modulo mod)
	// and the rule's own number i.
	kinds := []struct {
		list   *[]string
		format string
		mod    int
	}{
		{&p.Deny, "mcp:fs%d:write_file:path=/srv/team%d/protected/**", 40},
		{&p.Allow, "mcp:fs%d:read_*:path=/srv/team%d/**", 40},
		{&p.Ask, "mcp:git%d:git_push:branch!=feature/team%d-*", 25},
		{&p.Deny, "mcp:shell%d:run:cmd~=.*(sudo|curl .*\\| *sh|/srv/team%d/secrets).*", 10},
		{&p.Allow, "mcp:http%d:fetch:url=https://api%d.example.com/*", 20},
		{&p.Allow, "mcp:db%d:query:database=analytics_%d", 15},
		{&p.Deny, "mcp:db%d:execute:database=prod_%d", 15},
		{&p.Allow, "mcp:tools%d:tool_%d", 30},
	}
	for i := 0; p.Len() < n; i++ {
		k := kinds[i%len(kinds)]
		*k.list = append(*k.list, fmt.Sprintf(k.format, i%k.mod, i))
	}
	return p
}

// A configSpec is one mcpwarden config to generate.
type configSpec struct {
	Listen    string            // "stdio" or host:port
	Servers   map[string]string // name → YAML body (already indented by 4)
	Order     []string          // server names in the order written
	Policy    policyShape
	AuditPath string
}

// YAML renders c as an mcpwarden config file.
func (c configSpec) YAML() string {
	var b strings.Builder
	fmt.Fprintf(&b, "listen: %q\nlog: { level: warn }\nservers:\n", c.Listen)
	for _, name := range c.Order {
		fmt.Fprintf(&b, "  %s:\n%s\n", name, strings.TrimRight(c.Servers[name], "\n"))
	}
	b.WriteString("policy:\n  default: deny\n")
	for _, l := range []struct {
		key   string
		rules []string
	}{{"deny", c.Policy.Deny}, {"ask", c.Policy.Ask}, {"allow", c.Policy.Allow}} {
		fmt.Fprintf(&b, "  %s:\n", l.key)
		for _, r := range l.rules {
			fmt.Fprintf(&b, "    - %s\n", yamlQuote(r))
		}
	}
	if c.AuditPath != "" {
		fmt.Fprintf(&b, "audit:\n  path: %s\n", yamlQuote(c.AuditPath))
	}
	return b.String()
}

// stdioServer is the YAML body of a stdio server entry.
func stdioServer(command string, args ...string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = yamlQuote(a)
	}
	return fmt.Sprintf("    command: %s\n    args: [%s]", yamlQuote(command), strings.Join(quoted, ", "))
}

// httpServer is the YAML body of a streamable HTTP server entry.
func httpServer(url string) string {
	return fmt.Sprintf("    url: %s", yamlQuote(url))
}

// yamlQuote is s as a YAML double-quoted scalar.
func yamlQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}
