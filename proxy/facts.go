package proxy

import (
	"slices"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/pin"
	"github.com/mcpwarden/mcpwarden/proxy/naming"
	"github.com/mcpwarden/mcpwarden/rules"
)

// facts returns t's annotations as the rules' Facts (`@readOnly` …),
// only when t's current definition is the pinned one: an upstream can claim
// anything about a tool nobody has pinned, so then every fact is absent. A
// pinned tool's hint that is not set reads as MCP's default for it
// (readOnly false, destructive true, idempotent false, openWorld true).
func (r *review) facts(t naming.Tool) rules.Facts {
	p := r.pinning
	if p == nil || p.Lock == nil || !p.Lock.Known(t.Server) {
		return rules.Facts{}
	}
	tools, _ := r.upstream.Tools(t.Server)
	i := slices.IndexFunc(tools, func(m mcp.Tool) bool { return m.Name == t.Name })
	if i < 0 {
		return rules.Facts{}
	}
	for _, ch := range p.Lock.Check(t.Server, tools[i:i+1]) {
		if ch.Tool == t.Name && ch.Kind != pin.Removed {
			return rules.Facts{}
		}
	}
	a := tools[i].Annotations
	return rules.Facts{
		ReadOnly:    hint(a.ReadOnlyHint, false),
		Destructive: hint(a.DestructiveHint, true),
		Idempotent:  hint(a.IdempotentHint, false),
		OpenWorld:   hint(a.OpenWorldHint, true),
	}
}

// hint reads an optional annotation, def when it is not set.
func hint(b *bool, def bool) rules.Hint {
	if b == nil {
		return rules.HintOf(def)
	}
	return rules.HintOf(*b)
}
