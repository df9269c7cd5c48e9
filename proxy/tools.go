package proxy

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/proxy/naming"
	"github.com/mcpwarden/mcpwarden/proxy/toolscreen"
	"github.com/mcpwarden/mcpwarden/rules"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/argschema"
)

// A toolset is the exposed tools: the upstream definitions by server and the
// wire-name map built from them, and the filter that lists them. Updates
// are serialised; readers load the map without locking.
type toolset struct {
	*base
	core                // the handler of each tool
	review   *review    // the changed definitions, not listed until accepted
	mu       sync.Mutex // held while the set is rebuilt
	byServer map[string][]mcp.Tool
	schemas  map[string]map[string]*argschema.Schema // by server and upstream tool name, compiled once per definition
}

// SetTools replaces the tools exposed for one upstream server (after a
// restart or its tools/list_changed) and tells clients the list changed. A
// set that would make two tools share a wire name is refused: the old set
// stays and the error names both tools. The change is audited as a
// tools_changed event.
func (s *Server) SetTools(ctx context.Context, name string, tools []mcp.Tool) error {
	added, removed, changed, err := s.tools.set(name, tools)
	if err != nil {
		s.logger.Error("upstream tools not updated", "server", name, "err", err)
		return err
	}
	if len(added)+len(removed)+len(changed) == 0 {
		return nil
	}
	var parts []string
	for _, p := range []struct {
		sign  string
		names []string
	}{{"+", added}, {"-", removed}, {"~", changed}} {
		for _, n := range p.names {
			parts = append(parts, p.sign+n)
		}
	}
	detail := strings.Join(parts, " ")
	s.logger.Info("upstream tools changed", "server", name, "changes", detail)
	s.writeAudit(ctx, audit.Event{Event: audit.KindToolsChanged, Server: name, Detail: detail, PolicySHA256: s.current().policy.SHA256()})
	return nil
}

// set rebuilds the exposed set with name's tools replaced and returns
// the canonical names added, removed and redefined.
func (ts *toolset) set(name string, tools []mcp.Tool) (added, removed, changed []string, err error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	cur := ts.current()
	if cur.policy.HidesSuspiciousTools() {
		tools = ts.unsuspicious(name, tools)
	}
	next, reg, added, removed, changed, err := ts.stage(cur, name, tools, false)
	if err != nil {
		return nil, nil, nil, err
	}
	ts.snap.Store(next)
	ts.register(reg)
	return added, removed, changed, nil
}

// A registration is what a rebuilt tool set changes in the mcp-go server:
// the wire names it no longer has and the tools it (re)defines.
type registration struct {
	gone []string
	defs []server.ServerTool
}

// register applies reg to the mcp-go server, once the snapshot that
// names its tools is in force.
func (ts *toolset) register(reg registration) {
	if len(reg.gone) > 0 {
		ts.mcp.DeleteTools(reg.gone...)
	}
	if len(reg.defs) > 0 {
		ts.mcp.AddTools(reg.defs...)
	}
}

// stage rebuilds the exposed set of cur, under cur's naming, with
// name's tools replaced, or the server dropped altogether with remove. It
// returns the snapshot with the new names, for the caller to swap in, and
// the registration to apply after it. ts.mu is held; ts.byServer
// is updated.
func (ts *toolset) stage(cur *snapshot, name string, tools []mcp.Tool, remove bool) (next *snapshot, reg registration, added, removed, changed []string, err error) {
	scheme := cur.naming
	byServer := maps.Clone(ts.byServer)
	if byServer == nil {
		byServer = map[string][]mcp.Tool{}
	}
	byServer[name] = tools
	if remove {
		delete(byServer, name)
	}

	names, err := scheme.Names(byServer)
	if err != nil {
		return nil, reg, nil, nil, nil, err
	}

	before := map[string]mcp.Tool{}
	for _, def := range ts.byServer[name] {
		before[def.Name] = def
	}
	wires := map[string]bool{}
	schemas := make(map[string]*argschema.Schema, len(tools))
	for _, def := range tools {
		t := scheme.Tool(name, def.Name)
		old, had := before[def.Name]
		same := had && sameDefinition(old, def)
		schema := ts.toolSchema(name, def, ts.schemas[name], same)
		schemas[def.Name] = schema
		if !had {
			added = append(added, t.Canonical)
			if len(t.Wire) > naming.LongWire {
				ts.logger.Warn("long wire name: clients that add a prefix may cut it; set an alias", "tool", t.Canonical, "wire_name", t.Wire)
			}
		} else if !same {
			changed = append(changed, t.Canonical)
		}
		delete(before, def.Name)
		wires[t.Wire] = true
		def.Name = t.Wire
		reg.defs = append(reg.defs, server.ServerTool{Tool: def, Handler: ts.handler(t, schema)})
	}
	for tool := range before {
		removed = append(removed, naming.Canonical(name, tool))
	}
	slices.Sort(removed)
	// What the server had registered and no longer has, by the names it
	// was registered under (the naming may have changed since).
	for wire, t := range cur.names.All() {
		if t.Server == name && !wires[wire] {
			reg.gone = append(reg.gone, wire)
		}
	}
	ts.byServer = byServer
	if ts.schemas == nil {
		ts.schemas = map[string]map[string]*argschema.Schema{}
	}
	ts.schemas[name] = schemas
	if remove {
		delete(ts.schemas, name)
	}
	return cur.withNames(names), reg, added, removed, changed, nil
}

// sameDefinition reports whether two listings of a tool define it alike.
func sameDefinition(a, b mcp.Tool) bool {
	ja, errA := a.MarshalJSON()
	jb, errB := b.MarshalJSON()
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// unsuspicious returns server's tools without those toolscreen.Tool flags
// (hide_suspicious_tools), logging each one it hides. A hidden tool is
// neither listed nor callable.
func (ts *toolset) unsuspicious(server string, tools []mcp.Tool) []mcp.Tool {
	return slices.DeleteFunc(slices.Clone(tools), func(t mcp.Tool) bool {
		why := toolscreen.Tool(t)
		if why != "" {
			ts.logger.Warn("hiding a tool whose description looks aimed at the model", "tool", naming.Canonical(server, t.Name), "why", why)
		}
		return why != ""
	})
}

// listed is the tools/list filter: it drops every tool an unconditional deny
// hides. mcp-go applies the same filter to tools/call, so a hidden tool
// cannot be called by guessing its wire name either (see auditHiddenCall).
// Since mcp-go runs it on every call, it returns tools itself when it drops
// none, and copies only once it does: a call costs no allocation here.
func (ts *toolset) listed(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
	snap := ts.current()
	profile := ts.profileOf(ctx)
	var out []mcp.Tool // nil until a tool is dropped
	for i := range tools {
		if ts.shown(snap, profile, tools[i].Name) {
			if out != nil {
				out = append(out, tools[i])
			}
			continue
		}
		if out == nil {
			out = append(make([]mcp.Tool, 0, len(tools)-1), tools[:i]...)
		}
	}
	if out == nil {
		return tools
	}
	return out
}

// shown reports whether the tool registered as wire is listed to profile
// under snap: it is known, no unconditional deny hides it, and its
// definition is not a change to its pinned one still waiting to be
// accepted (see Pinning: none is listed before it is accepted).
func (ts *toolset) shown(snap *snapshot, profile, wire string) bool {
	t, ok := snap.names.Lookup(wire)
	if !ok || snap.policy.Hidden(rules.Call{Profile: profile, Server: t.Server, Tool: t.Name}) {
		return false
	}
	_, changed := ts.review.of(t.Canonical)
	return !changed
}
