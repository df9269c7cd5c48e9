package clientconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
)

// SecretDenyRules are the deny rules of the generated starting policy: files
// that hold credentials are out of reach of every tool, under whatever key
// a tool takes a path (@path is every path-like value of a call), as in
// examples/quickstart.yaml.
var SecretDenyRules = func() []string {
	var out []string
	for _, p := range []string{
		"**/.env", "**/.env.*", "**/.git/**", "**/.ssh/**", "**/.gnupg/**", "**/.aws/**", "**/.kube/**",
		"**/.docker/config.json", "**/*.{pem,key,p12,pfx,jks,keystore}", "**/id_{rsa,dsa,ecdsa,ed25519}*",
		"**/{.netrc,.npmrc,.pypirc,.git-credentials,.htpasswd,credentials,credentials.json}",
	} {
		out = append(out, "mcp:*:*:@path="+p)
	}
	return out
}()

// importedHeader and importedTail frame the first line of a config import
// wrote, around the client file it came from (see ImportedFrom).
const (
	importedHeader = "# mcpwarden config imported from "
	importedTail   = " by `mcpwarden import`."
)

// ImportedFrom returns the client config file a config import wrote came
// from, as its first line names it (an absolute path, when import had
// one), so that self-protection can keep servers off the file that routes
// the client through mcpwarden, whatever its name.
func ImportedFrom(config []byte) (string, bool) {
	line, _, _ := bytes.Cut(config, []byte("\n"))
	from, ok := strings.CutPrefix(strings.TrimSuffix(string(line), "\r"), importedHeader)
	if !ok {
		return "", false
	}
	if from, ok = strings.CutSuffix(from, importedTail); !ok {
		return "", false
	}
	i := strings.LastIndex(from, " (")
	if i < 0 || !strings.HasSuffix(from, ")") {
		return "", false // import had no file: the line names the format alone
	}
	if _, err := ParseFormat(from[i+2 : len(from)-1]); err != nil {
		return "", false
	}
	return from[:i], i > 0
}

// render writes the mcpwarden config. The layout is fixed and commented, so
// that the file reads as if written by hand.
func render(source string, f Format, servers []server, rules Permissions, vars []Var) []byte {
	var b bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	from := f.String()
	if source != "" {
		from = source + " (" + f.String() + ")"
	}
	w(importedHeader+"%s"+importedTail+"\n", from)
	w("# Check it with `mcpwarden validate --config FILE`; `mcpwarden tools --config FILE`\n")
	w("# lists every tool with the decision it gets.\n")
	if len(vars) > 0 {
		w("#\n# mcpwarden needs these environment variables when it starts (literal secrets\n")
		w("# of the client config were replaced with ${VAR} references, not copied):\n")
		width := 0
		for _, v := range vars {
			width = max(width, len(v.Name))
		}
		for _, v := range vars {
			optional := ""
			if v.Optional {
				optional = " (optional: its default is used when it is not set)"
			}
			w("#   %-*s  %s%s\n", width, v.Name, strings.Join(v.Where, ", "), optional)
		}
	}
	w("listen: stdio\n\n")
	w("# Each server on this machine is confined to its workspace: a path outside\n")
	w("# those directories is asked about (outside_workspace: ask), whatever the\n")
	w("# rules allow. Remote servers are not: their paths are not on this machine.\n")
	w("servers:\n")
	var registries []string // the allow rules of package runners' registries
	for _, s := range servers {
		w("  %s:\n", s.key)
		if s.trans == "stdio" {
			w("    command: %s\n", scalar(s.command))
			// A package runner downloads the server on its first start,
			// through its egress proxy: allow its registry, by name.
			for _, h := range registryHosts[filepath.Base(s.command)] {
				registries = append(registries, "mcp:"+s.key+":network/connect:host="+h)
			}
			if len(s.args) > 0 {
				w("    args: %s\n", flow(s.args))
			}
			if s.cwd != "" {
				w("    cwd: %s\n", scalar(s.cwd))
			}
			writeMap(&b, "env", s.env)
			writeWorkspace(&b, s.workspace)
			continue
		}
		w("    url: %s\n", scalar(s.url))
		if s.trans == "sse" {
			w("    transport: sse\n")
		}
		writeMap(&b, "headers", s.headers)
	}
	example := servers[0].key
	w("\npolicy:\n")
	w("  # A safe start: a call that no rule matches is decided \"ask\" (the user\n")
	w("  # approves it), files that hold credentials are denied to every tool, and\n")
	w("  # the servers on this machine are confined to their workspace above.\n")
	w("  # Add allow rules for what is safe, e.g. \"mcp:%s:list_*\". Deny beats ask\n", example)
	w("  # beats allow, whatever the order (docs/rules.md).\n")
	if len(registries) > 0 {
		w("  # npx and uvx download their server on first start: the network/connect\n")
		w("  # rules allow their registry, and nothing else leaves the sandbox unasked.\n")
	}
	w("  default: ask\n")
	writeList(&b, "deny", append(append([]string{}, SecretDenyRules...), rules.Deny...))
	writeList(&b, "ask", rules.Ask)
	writeList(&b, "allow", append(registries, rules.Allow...))
	w("\n# An ask the client cannot show waits on the approvals page (its URL is\n")
	w("# printed at start) and in `mcpwarden approvals`, instead of being refused.\n")
	w("ask:\n  approvals: local\n")
	if f == Codex {
		w("  elicitation: false   # codex exec declines every question without showing it\n")
	}
	w("\naudit:\n  path: mcpwarden-audit.jsonl    # relative to this file\n")
	return b.Bytes()
}

// registryHosts are the hosts a package runner downloads a server from on
// its first start.
var registryHosts = map[string][]string{
	"npx": {"registry.npmjs.org"},
	"uvx": {"pypi.org", "files.pythonhosted.org"},
}

// writeWorkspace writes a server's policy confining its paths to dirs.
func writeWorkspace(b *bytes.Buffer, dirs []string) {
	if len(dirs) == 0 {
		return
	}
	b.WriteString("    policy:\n")
	fmt.Fprintf(b, "      workspace: %s\n", flow(dirs))
	fmt.Fprintf(b, "      outside_workspace: %s\n", OutsideWorkspace)
}

func writeMap(b *bytes.Buffer, name string, kv [][2]string) {
	if len(kv) == 0 {
		return
	}
	fmt.Fprintf(b, "    %s:\n", name)
	for _, p := range kv {
		fmt.Fprintf(b, "      %s: %s\n", key(p[0]), scalar(p[1]))
	}
}

func writeList(b *bytes.Buffer, name string, items []string) {
	if len(items) == 0 {
		fmt.Fprintf(b, "  %s: []\n", name)
		return
	}
	fmt.Fprintf(b, "  %s:\n", name)
	for _, it := range items {
		fmt.Fprintf(b, "    - %s\n", quoted(it))
	}
}

var (
	plainScalar = regexp.MustCompile(`^[A-Za-z_/][A-Za-z0-9_/.@+=-]*$`)
	plainKey    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)
)

// yamlWords are plain scalars YAML 1.1 or 1.2 reads as something other than
// a string.
var yamlWords = map[string]bool{
	"true": true, "false": true, "yes": true, "no": true, "on": true, "off": true,
	"y": true, "n": true, "null": true, "nan": true, "inf": true,
}

// scalar writes s plain when YAML reads it back as the same string, else
// double-quoted.
func scalar(s string) string {
	if plainScalar.MatchString(s) && !yamlWords[strings.ToLower(s)] {
		return s
	}
	return quoted(s)
}

func key(s string) string {
	if plainKey.MatchString(s) && !yamlWords[strings.ToLower(s)] {
		return s
	}
	return quoted(s)
}

// quoted is s as a double-quoted scalar: a JSON string is one.
func quoted(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

func flow(items []string) string {
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = quoted(it)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
