// Package naming is the vocabulary of tool names: a tool's canonical name
// (mcp:<server>:<tool>, used in rules, audit and the CLI), its wire name (what
// clients see and call), the Scheme that gives wire names and the Names map
// that turns them back into tools. It is pure: no I/O, no MCP session.
package naming

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/rules"
)

// DefaultSeparator joins server and tool in a wire name.
const DefaultSeparator = "__"

// LongWire is the length past which a wire name is logged as risky:
// clients add their own prefix (mcp__warden__) and may cut it.
const LongWire = 40

// A Tool is one upstream tool as the proxy knows it: where it lives, its
// canonical name (used in rules, audit and the CLI) and its wire name (what
// clients see and call).
type Tool struct {
	Server    string // server key in config
	Name      string // upstream tool name
	Canonical string // mcp:<server>:<tool>
	Wire      string
}

// Canonical returns mcp:<server>:<tool> (see rules.Canonical).
func Canonical(server, tool string) string { return rules.Canonical(server, tool) }

// WireName maps a tool to its default client-safe name: server + sep +
// tool with every character outside [a-zA-Z0-9_-] replaced by "_", and a
// name longer than 64 cut to a prefix plus a stable hash of the canonical
// name. Scheme.Wire applies aliases and prefix: false on top.
func WireName(server, tool, sep string) string {
	if sep == "" {
		sep = DefaultSeparator
	}
	name := sanitize(server + sep + tool)
	if len(name) <= rules.MaxWireName {
		return name
	}
	sum := sha256.Sum256([]byte(Canonical(server, tool)))
	suffix := "_" + hex.EncodeToString(sum[:4])
	return name[:rules.MaxWireName-len(suffix)] + suffix
}

func sanitize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// A Names is the bijection between wire names and tools.
type Names struct {
	byWire map[string]Tool
}

// NewNames builds the name map for tools, already carrying their wire
// names. Two tools with one wire name, or a wire name clients would reject,
// is an error naming both tools and how to fix it.
func NewNames(tools []Tool) (*Names, error) {
	n := &Names{byWire: make(map[string]Tool, len(tools))}
	for _, t := range tools {
		if !rules.ValidWireName(t.Wire) {
			return nil, fmt.Errorf("wire name %q for %s does not match %s: set servers.%s.aliases.%s", t.Wire, t.Canonical, rules.WireNameGrammar, t.Server, t.Name)
		}
		if prev, dup := n.byWire[t.Wire]; dup {
			return nil, fmt.Errorf("tools %s and %s both map to wire name %q: give one an alias under servers.<name>.aliases", prev.Canonical, t.Canonical, t.Wire)
		}
		n.byWire[t.Wire] = t
	}
	return n, nil
}

// Lookup returns the tool behind a wire name.
func (n *Names) Lookup(wire string) (Tool, bool) {
	t, ok := n.byWire[wire]
	return t, ok
}

// All yields every wire name with its tool, in no set order.
func (n *Names) All() iter.Seq2[string, Tool] { return maps.All(n.byWire) }

// A Scheme says how tools get their wire names. The zero value gives
// <server>__<tool> for every tool.
type Scheme struct {
	// Separator joins server and tool; "" is DefaultSeparator.
	Separator string
	// Aliases maps server → upstream tool name → wire name.
	Aliases map[string]map[string]string
	// Unprefixed names the servers whose tools keep their upstream names
	// (servers.<name>.prefix: false), so that mcpwarden can stand in for one
	// server transparently. A collision is an error, as always.
	Unprefixed map[string]bool
}

// Wire returns the wire name of a server's tool.
func (s Scheme) Wire(server, tool string) string {
	if alias := s.Aliases[server][tool]; alias != "" {
		return alias
	}
	if s.Unprefixed[server] {
		return tool
	}
	return WireName(server, tool, s.Separator)
}

// Tool returns a server's tool as the proxy knows it under this naming.
func (s Scheme) Tool(server, tool string) Tool {
	return Tool{Server: server, Name: tool, Canonical: Canonical(server, tool), Wire: s.Wire(server, tool)}
}

// Names builds the wire-name map for every server's tools under this
// naming; a collision or a name clients would reject is an error naming
// the tools (see NewNames).
func (s Scheme) Names(byServer map[string][]mcp.Tool) (*Names, error) {
	var all []Tool
	for _, srv := range slices.Sorted(maps.Keys(byServer)) {
		for _, def := range byServer[srv] {
			all = append(all, s.Tool(srv, def.Name))
		}
	}
	return NewNames(all)
}
