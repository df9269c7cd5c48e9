package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/pin"
	"github.com/mcpwarden/mcpwarden/proxy/naming"
	"github.com/mcpwarden/mcpwarden/proxy/toolscreen"
	"github.com/mcpwarden/mcpwarden/rules"
)

// gatePin is the gate a verdict names when a changed definition decided it.
const gatePin = "pin"

// Pinning is the rug-pull defence: each tool's definition is pinned in a
// lock file on first sight, and a later, different definition gets the
// server's reaction until `mcpwarden pin --update` accepts it. Under every
// reaction but warn, a changed tool is not listed until then: its new
// description never reaches the model before a person accepted it, and the
// old one would misdescribe what runs now. Calls to it are refused with a
// message naming the change and how to accept it (under ask too: the
// model can only call it from the old description, which no longer says
// what runs, so there is nothing for a person to approve per call). Under
// warn, a change is accepted as it comes, unless the new definition looks
// aimed at the model (toolscreen.Tool): that one is held back as under hide.
type Pinning struct {
	// Lock holds the pinned definitions; *pin.Lock is the one mcpwarden
	// uses. nil pins nothing.
	Lock PinLock
	// OnChange maps a server to its reaction; servers not in it get Default
	// ("" is pin.DefaultReaction).
	OnChange map[string]pin.Reaction
	Default  pin.Reaction
}

// A PinLock holds the pinned tool definitions of each server: what Pinning
// needs of internal/pin's Lock, so that the proxy's API names a method set
// rather than the lock file's type.
type PinLock interface {
	// Path names the lock for people (in log lines).
	Path() string
	// Known reports whether server's tools were ever pinned.
	Known(server string) bool
	// Check returns how tools differ from server's pinned definitions.
	Check(server string, tools []mcp.Tool) []pin.Change
	// Update pins tools as server's definitions, in memory.
	Update(server string, tools []mcp.Tool) error
	// Save writes the lock.
	Save() error
}

var _ PinLock = (*pin.Lock)(nil)

func (p *Pinning) reaction(server string) pin.Reaction {
	return p.OnChange[server].Or(p.Default.Or(pin.DefaultReaction))
}

// A review checks each server's tools against the pins and holds the tools
// whose changed definitions are not accepted, with the reaction each gets
// and the change.
type review struct {
	*base
	core    // audits the changes
	pinning *Pinning
	mu      sync.Mutex
	tools   map[string]pinned // by canonical name
}

type pinned struct {
	reaction pin.Reaction
	change   string
}

func (r *review) of(canonical string) (pinned, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.tools[canonical]
	return p, ok
}

// set replaces the server's entries.
func (r *review) set(server string, entries map[string]pinned) {
	r.mu.Lock()
	defer r.mu.Unlock()
	prefix := naming.Canonical(server, "")
	for name := range r.tools {
		if strings.HasPrefix(name, prefix) {
			delete(r.tools, name)
		}
	}
	if r.tools == nil {
		r.tools = map[string]pinned{}
	}
	for name, p := range entries {
		r.tools[name] = p
	}
}

// check compares a server's tools with the lock, pins a server seen for
// the first time, and records the changed tools for review. Changes are
// logged and audited.
func (r *review) check(ctx context.Context, server string, tools []mcp.Tool) {
	p := r.pinning
	if p == nil || p.Lock == nil {
		return
	}
	if !p.Lock.Known(server) {
		if err := p.Lock.Update(server, tools); err == nil {
			err = p.Lock.Save()
			if err != nil {
				r.logger.Error("saving the tool pin lock", "path", p.Lock.Path(), "err", err)
			}
		}
		return
	}
	reaction := p.reaction(server)
	entries := map[string]pinned{}
	// claims is set when, under warn, a tool's annotations changed: the
	// new definition is exposed but not pinned, so that its annotations
	// stay untrusted (no facts, see toolFacts) until `mcpwarden pin
	// --update`: a tool newly claiming to be read-only must not widen what
	// an @readOnly rule allows.
	claims := false
	for _, ch := range p.Lock.Check(server, tools) {
		if ch.Kind == pin.Removed {
			continue
		}
		canonical := naming.Canonical(server, ch.Tool)
		diff := ch.String()
		held := reaction
		if reaction == pin.Warn {
			if why := suspiciousChange(tools, ch.Tool); why != "" {
				held, diff = pin.Hide, diff+"; the new definition looks aimed at the model: "+why
			}
		}
		r.logger.Warn("tool definition differs from the pinned one", "tool", canonical, "reaction", held, "change", diff)
		r.writeAudit(ctx, audit.Event{Event: audit.KindToolsChanged, Server: server, Tool: canonical, Detail: "definition changed (on_tool_change: " + string(reaction) + "): " + diff, PolicySHA256: r.current().policy.SHA256()})
		if held != pin.Warn {
			entries[canonical] = pinned{reaction: held, change: diff}
		}
		claims = claims || slices.Contains(ch.Fields, pin.FieldAnnotations)
	}
	if len(entries) == 0 && !claims {
		// Nothing held back: what the server lists now is what is pinned.
		if err := p.Lock.Update(server, tools); err == nil {
			if err := p.Lock.Save(); err != nil {
				r.logger.Error("saving the tool pin lock", "path", p.Lock.Path(), "err", err)
			}
		}
	}
	r.set(server, entries)
}

// suspiciousChange says why the definition of the tool named name in
// tools looks aimed at the model, "" if it does not or is not there.
func suspiciousChange(tools []mcp.Tool, name string) string {
	for _, t := range tools {
		if t.Name == name {
			return toolscreen.Tool(t)
		}
	}
	return ""
}

// refuseChanged refuses a tools/call, raw, of the tool with wire name
// name while its changed definition waits to be accepted: the tool is not
// listed (see Pinning), so the call cannot reach a handler (mcp-go's tool
// filter holds calls too), and the client is told why and how to accept
// the change instead of "tool not found". The refusal is audited as a
// decision. nil when the tool is not waiting.
func (s *Server) refuseChanged(ctx context.Context, raw json.RawMessage, name string) error {
	t, ok := s.Lookup(name)
	if !ok {
		return nil
	}
	p, waiting := s.review.of(t.Canonical)
	if !waiting || s.current().policy.Hidden(rules.Call{Profile: s.profileOf(ctx), Server: t.Server, Tool: t.Name}) {
		return nil // a tool the policy hides is not found, changed or not (auditHiddenCall)
	}
	var req mcp.CallToolRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		req.Params.Name = name
	}
	c := s.newCall(ctx, t, req)
	c.verdict = rules.Verdict{Decision: rules.Deny, Rule: "on_tool_change: " + string(p.reaction), Gate: gatePin, Reason: changedReason(p)}
	c.grantedBy = audit.GrantedByRule
	s.tel.Decision(c.profile, t.Server, t.Name, c.verdict.Decision)
	if err := s.audit.Write(ctx, c.decisionEvent()); err != nil {
		s.tel.AuditWriteFailed()
		s.logger.Error("writing audit event", "tool", t.Canonical, "err", err)
	}
	return fmt.Errorf("%w: %s is not offered until its changed definition is accepted: %s", errRefused, t.Canonical, changedReason(p))
}

// changedReason says why a changed tool is held back and how to accept it.
func changedReason(p pinned) string {
	return "its definition changed since it was pinned (" + p.change + "); accept it with `mcpwarden pin --update`, then reload or restart mcpwarden"
}

// verdict applies a changed tool's reaction on top of the rules' verdict:
// deny and hide refuse, ask turns an allow into an ask.
func (r *review) verdict(t naming.Tool, v rules.Verdict) rules.Verdict {
	p, ok := r.of(t.Canonical)
	if !ok {
		return v
	}
	rule := "on_tool_change: " + string(p.reaction)
	reason := changedReason(p)
	switch {
	case p.reaction == pin.Deny || p.reaction == pin.Hide:
		return rules.Verdict{Decision: rules.Deny, Rule: rule, Gate: gatePin, Reason: reason}
	case p.reaction == pin.Ask && v.Decision == rules.Allow:
		return rules.Verdict{Decision: rules.Ask, Rule: rule, Gate: gatePin, Reason: reason}
	}
	return v
}
