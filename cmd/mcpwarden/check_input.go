package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// canonicalMeant is the canonical name meant by tool, a name check was
// given in another form: a client's (mcp__mcpwarden__fs__read_file,
// mcp__fs__read_file), a wire name (fs__read_file), one without mcp:
// (fs:read_file) or a bare tool (read_file, as mcp:<server>:read_file,
// or for a config of one server, with its name). It is "" for a name
// already canonical.
func canonicalMeant(tool string, servers []string) string {
	if strings.HasPrefix(tool, "mcp:") {
		return ""
	}
	name := strings.TrimPrefix(strings.TrimPrefix(tool, "mcp__"), "mcpwarden__")
	for _, sep := range []string{"__", ":"} {
		if server, rest, ok := strings.Cut(name, sep); ok && slices.Contains(servers, server) && rest != "" {
			return "mcp:" + server + ":" + rest
		}
	}
	if len(servers) == 1 {
		return "mcp:" + servers[0] + ":" + name
	}
	return "mcp:<server>:" + name + " (servers: " + strings.Join(servers, ", ") + ")"
}

// argumentsError is err, jsonargs' refusal of raw, check's JSON arguments,
// with what to write and, for text that is no JSON, the column it breaks
// at (as json.Unmarshal counts it; the stream decoder jsonargs reads with
// counts differently from one error to another).
func argumentsError(err error, raw string) error {
	var v any
	if syn, ok := errors.AsType[*json.SyntaxError](json.Unmarshal([]byte(raw), &v)); ok {
		err = fmt.Errorf("arguments: invalid JSON at column %d of %s: %w", syn.Offset, raw, syn)
	}
	return fmt.Errorf(`%w; write the arguments as one JSON object in single quotes, e.g. '{"path": "README.md"}', or each as --arg key=value`, err)
}
