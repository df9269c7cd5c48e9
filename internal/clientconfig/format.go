// Package clientconfig reads the MCP server configuration of MCP clients
// (Claude Desktop, Claude Code, Cursor, VS Code, OpenCode, Gemini CLI,
// Codex), turns it into an
// mcpwarden config with a safe starting policy, and rewrites the client's
// file so that the client launches mcpwarden instead. It is pure: it reads
// and returns bytes and never touches the file system or the environment,
// which the import command does.
package clientconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
)

// A Format is a client's config file format. The zero value, Unknown, is no
// format: Parse refuses it.
type Format uint8

// The formats, with their names (as given to --from) in the comments.
const (
	Unknown       Format = iota
	ClaudeDesktop        // "claude-desktop": claude_desktop_config.json, mcpServers
	ClaudeCode           // "claude-code": .mcp.json or ~/.claude.json, mcpServers with type
	Cursor               // "cursor": .cursor/mcp.json, mcpServers
	VSCode               // "vscode": .vscode/mcp.json, servers with type, inputs
	OpenCode             // "opencode": opencode.json, mcp with type local|remote
	Gemini               // "gemini": ~/.gemini/settings.json, mcpServers with httpUrl
	Codex                // "codex": ~/.codex/config.toml, [mcp_servers.<name>] tables
)

var formatNames = [...]string{
	ClaudeDesktop: "claude-desktop",
	ClaudeCode:    "claude-code",
	Cursor:        "cursor",
	VSCode:        "vscode",
	OpenCode:      "opencode",
	Gemini:        "gemini",
	Codex:         "codex",
}

// Formats returns every known format, in a fixed order.
func Formats() []Format {
	return []Format{ClaudeDesktop, ClaudeCode, Cursor, VSCode, OpenCode, Gemini, Codex}
}

// String returns the format's name, or "unknown".
func (f Format) String() string {
	if f > Unknown && int(f) < len(formatNames) {
		return formatNames[f]
	}
	return "unknown"
}

// MarshalText returns the format's name; Unknown is an error.
func (f Format) MarshalText() ([]byte, error) {
	if f == Unknown || int(f) >= len(formatNames) {
		return nil, fmt.Errorf("invalid client format %d", uint8(f))
	}
	return []byte(f.String()), nil
}

// UnmarshalText sets f from its name.
func (f *Format) UnmarshalText(b []byte) error {
	v, err := ParseFormat(string(b))
	if err != nil {
		return err
	}
	*f = v
	return nil
}

// ParseFormat returns the format named s ("claude-desktop", "claude-code",
// "cursor", "vscode", "opencode", "gemini" or "codex").
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats() {
		if f.String() == s {
			return f, nil
		}
	}
	names := make([]string, 0, len(formatNames))
	for _, f := range Formats() {
		names = append(names, f.String())
	}
	return Unknown, fmt.Errorf("unknown client format %q: use one of %s", s, strings.Join(names, ", "))
}

// mcpKey is the top-level key that holds the MCP servers in files of f.
func (f Format) mcpKey() string {
	switch f {
	case VSCode:
		return "servers"
	case OpenCode:
		return "mcp"
	case Codex:
		return codexKey
	default:
		return "mcpServers"
	}
}

// Detect guesses the format of a client config from its file name (path may
// be just a base name) and its content. The name decides when it is
// conclusive (claude_desktop_config.json, .mcp.json, .claude.json,
// .cursor/mcp.json, .vscode/mcp.json, opencode.json[c], .gemini/settings.json,
// a .toml file, which is Codex's config.toml); otherwise the
// top-level keys do: `servers` is VS Code, `mcp` OpenCode, and `mcpServers`
// Claude Code when an entry has a `type` or the file has Claude Code keys,
// else Claude Desktop (whose shape Cursor shares).
func Detect(path string, data []byte) (Format, error) {
	base := filepath.Base(path)
	dir := filepath.Base(filepath.Dir(path))
	switch {
	case base == "claude_desktop_config.json":
		return ClaudeDesktop, nil
	case base == ".mcp.json" || base == ".claude.json":
		return ClaudeCode, nil
	case base == "mcp.json" && dir == ".cursor":
		return Cursor, nil
	case base == "mcp.json" && dir == ".vscode":
		return VSCode, nil
	case base == "opencode.json" || base == "opencode.jsonc":
		return OpenCode, nil
	case base == "settings.json" && dir == ".gemini":
		return Gemini, nil
	case strings.EqualFold(filepath.Ext(base), ".toml"):
		return Codex, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(stripJSONC(data), &top); err != nil {
		return Unknown, fmt.Errorf("%s: not a JSON object: %w", base, err)
	}
	_, hasMCPServers := top["mcpServers"]
	switch {
	case hasMCPServers:
		for _, k := range []string{"projects", "permissions", "numStartups", "enabledMcpjsonServers"} {
			if _, ok := top[k]; ok {
				return ClaudeCode, nil
			}
		}
		var servers map[string]map[string]json.RawMessage
		_ = json.Unmarshal(top["mcpServers"], &servers)
		for _, s := range servers {
			if _, ok := s["type"]; ok {
				return ClaudeCode, nil
			}
		}
		return ClaudeDesktop, nil
	case top["servers"] != nil:
		return VSCode, nil
	case top["mcp"] != nil:
		return OpenCode, nil
	case bytes.Contains(top["$schema"], []byte("opencode")):
		return OpenCode, nil
	}
	return Unknown, fmt.Errorf("%s: no mcpServers, servers or mcp key: not a client config mcpwarden knows; name the format with --from", base)
}

// DefaultPaths lists where a client keeps its MCP config, most specific
// first: project files relative to the working directory, then files under
// home. goos is runtime.GOOS; appData is %APPDATA% on Windows.
func DefaultPaths(f Format, goos, home, appData string) []string {
	switch f {
	case ClaudeDesktop:
		switch goos {
		case "darwin":
			return []string{filepath.Join(home, "Library", "Application Support", "Claude", "claude_desktop_config.json")}
		case "windows":
			return []string{filepath.Join(appData, "Claude", "claude_desktop_config.json")}
		default:
			return []string{filepath.Join(home, ".config", "Claude", "claude_desktop_config.json")}
		}
	case ClaudeCode:
		return []string{".mcp.json", filepath.Join(home, ".claude.json")}
	case Cursor:
		return []string{filepath.Join(".cursor", "mcp.json"), filepath.Join(home, ".cursor", "mcp.json")}
	case VSCode:
		return []string{filepath.Join(".vscode", "mcp.json")}
	case OpenCode:
		return []string{"opencode.json", "opencode.jsonc", filepath.Join(home, ".config", "opencode", "opencode.json")}
	case Gemini:
		return []string{filepath.Join(".gemini", "settings.json"), filepath.Join(home, ".gemini", "settings.json")}
	case Codex:
		return []string{filepath.Join(".codex", "config.toml"), filepath.Join(home, ".codex", "config.toml")}
	}
	return nil
}

// stripJSONC removes // and /* */ comments and trailing commas, which VS
// Code and OpenCode accept in their config files, so that the result is
// JSON. Strings are left alone.
func stripJSONC(data []byte) []byte {
	return scanJSONC(scanJSONC(data, true), false)
}

// scanJSONC drops comments (comments true) or trailing commas (false)
// outside strings.
func scanJSONC(data []byte, comments bool) []byte {
	out := make([]byte, 0, len(data))
	inString, escaped := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			out = append(out, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString = true
			out = append(out, c)
		case comments && c == '/' && i+1 < len(data) && data[i+1] == '/':
			for i < len(data) && data[i] != '\n' {
				i++
			}
			if i < len(data) {
				out = append(out, '\n')
			}
		case comments && c == '/' && i+1 < len(data) && data[i+1] == '*':
			end := bytes.Index(data[i+2:], []byte("*/"))
			if end < 0 {
				i = len(data)
			} else {
				i += 2 + end + 1
			}
			out = append(out, ' ')
		case !comments && c == ',':
			j := i + 1
			for j < len(data) && (data[j] == ' ' || data[j] == '\t' || data[j] == '\n' || data[j] == '\r') {
				j++
			}
			if j < len(data) && (data[j] == '}' || data[j] == ']') {
				continue // trailing comma
			}
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	return out
}

// hasJSONC reports whether data holds comments or trailing commas, which a
// rewrite does not keep.
func hasJSONC(data []byte) bool {
	return !bytes.Equal(bytes.TrimSpace(stripJSONC(data)), bytes.TrimSpace(data))
}
