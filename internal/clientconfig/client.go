package clientconfig

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
)

// An Entry is the single MCP server entry that points a client at
// mcpwarden: a stdio server running Command with Args.
type Entry struct {
	// Name is the entry's key; "" means "mcpwarden".
	Name    string
	Command string
	Args    []string
	// Env is passed to mcpwarden by the client (nil = none).
	Env map[string]string
	// Trusted lets the entry's tools through the client's own prompt,
	// where the entry itself says so (Gemini CLI's trust): mcpwarden
	// decides every call and asks the human itself.
	Trusted bool
	// PassEnv names the variables of the client's own environment the
	// client passes on, for a client that passes only those (Codex's
	// env_vars); see PassedVars.
	PassEnv []string
}

// DefaultEntryName is the key of the entry Rewrite writes when Entry.Name
// is empty. The tools then reach Claude Code as mcp__mcpwarden__<wire name>.
const DefaultEntryName = "mcpwarden"

// Rewrite returns the client config data with its MCP servers replaced by
// the single entry e, in the shape format f expects. Every other top-level
// key is kept, in its place and with its value (VS Code's inputs, Claude
// Code's projects, OpenCode's agents); the output is indented JSON, so
// comments and trailing commas of a JSONC file are not kept. Empty data is
// an empty object, which gives just the snippet.
func Rewrite(f Format, data []byte, e Entry) ([]byte, error) {
	if f == Unknown || int(f) >= len(formatNames) {
		return nil, fmt.Errorf("rewriting client config: unknown format")
	}
	if f == Codex {
		return rewriteCodex(data, e)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}")
	}
	top, order, err := topLevel(stripJSONC(data))
	if err != nil {
		return nil, err
	}
	section, err := json.Marshal(map[string]any{cmp.Or(e.Name, DefaultEntryName): entryValue(f, e)})
	if err != nil {
		return nil, err
	}
	mcpKey := f.mcpKey()
	if f == VSCode && top["servers"] == nil && top["mcp"] != nil {
		// settings.json: the servers are under "mcp".
		inner, innerOrder, err := topLevel(top["mcp"])
		if err != nil {
			return nil, fmt.Errorf("mcp: %w", err)
		}
		inner["servers"] = section
		if !slices.Contains(innerOrder, "servers") {
			innerOrder = append(innerOrder, "servers")
		}
		section, mcpKey = object(inner, innerOrder), "mcp"
	}
	top[mcpKey] = section
	if !slices.Contains(order, mcpKey) {
		order = append(order, mcpKey)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, object(top, order), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// Snippet is the MCP section alone, as Rewrite writes it into an empty file.
func Snippet(f Format, e Entry) ([]byte, error) { return Rewrite(f, nil, e) }

func entryValue(f Format, e Entry) any {
	switch f {
	case OpenCode:
		type local struct {
			Type        string            `json:"type"`
			Command     []string          `json:"command"`
			Environment map[string]string `json:"environment,omitempty"`
			Enabled     bool              `json:"enabled"`
		}
		return local{Type: "local", Command: append([]string{e.Command}, e.Args...), Environment: e.Env, Enabled: true}
	case ClaudeCode, VSCode:
		type typed struct {
			Type    string            `json:"type"`
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env,omitempty"`
		}
		return typed{Type: "stdio", Command: e.Command, Args: e.Args, Env: e.Env}
	case Gemini:
		type gemini struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env,omitempty"`
			Trust   bool              `json:"trust,omitempty"`
		}
		return gemini{Command: e.Command, Args: e.Args, Env: e.Env, Trust: e.Trusted}
	default:
		type plain struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env,omitempty"`
		}
		return plain{Command: e.Command, Args: e.Args, Env: e.Env}
	}
}

// object serialises members in order, values as they were.
func object(m map[string]json.RawMessage, order []string) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range order {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k) // a string always marshals
		b.Write(kb)
		b.WriteByte(':')
		b.Write(m[k])
	}
	b.WriteByte('}')
	return b.Bytes()
}

// HasComments reports whether data holds comments or trailing commas,
// which Rewrite does not keep.
func HasComments(data []byte) bool { return hasJSONC(data) }
