package proxy

import (
	"encoding/json"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/argschema"
	"github.com/mcpwarden/mcpwarden/proxy/naming"
)

// reasonArgTypes is the audit reason of a call refused because an argument
// is not of a type its tool's inputSchema declares.
const reasonArgTypes = "an argument is not of the type the tool's inputSchema declares"

// toolSchema returns the compiled inputSchema of server's tool def: the one
// compiled before when prev holds it and the definition is unchanged, else
// compiled now. A schema that cannot be used as written is logged (once per
// definition) and checks only the top-level types it declares (see
// argschema.Compile). ts.mu is held.
func (ts *toolset) toolSchema(server string, def mcp.Tool, prev map[string]*argschema.Schema, same bool) *argschema.Schema {
	if sc, ok := prev[def.Name]; ok && same {
		return sc
	}
	raw := []byte(def.RawInputSchema)
	if raw == nil {
		in := def.InputSchema
		if in.Type == "" && len(in.Properties) == 0 && in.Defs == nil {
			return nil // no schema: nothing to check
		}
		var err error
		if raw, err = json.Marshal(in); err != nil {
			ts.logger.Warn("a tool's inputSchema cannot be read; its argument types are not checked", "tool", naming.Canonical(server, def.Name), "err", err)
			return nil
		}
	}
	sc, err := argschema.Compile(raw)
	if err != nil {
		ts.logger.Warn("a tool's inputSchema cannot be used as written; only its top-level argument types are checked", "tool", naming.Canonical(server, def.Name), "err", err)
	}
	return sc
}

// checkTypes refuses c, when its arguments parsed, if one is not of a type
// schema declares for it: before any rule, so that a rule is only matched
// against a value the upstream reads as the rule sees it.
func (c *call) checkTypes(schema *argschema.Schema) {
	if c.argsErr == nil {
		c.argsErr = schema.Check(c.args)
	}
}

// argsReason is the audit reason for a call refused for its arguments
// (c.argsErr): set for a type the tool does not declare, empty for
// malformed arguments, whose error says it all.
func argsReason(err error) string {
	if _, ok := errors.AsType[*argschema.MismatchError](err); ok {
		return reasonArgTypes
	}
	return ""
}
