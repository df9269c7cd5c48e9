package clientconfig

import "path/filepath"

// ProjectFiles returns the client config files that live in a project, as
// paths relative to it: the files that can route a client through
// mcpwarden (or around it) and its permissions, for every client import
// reads and those it does not yet (Gemini CLI, Codex). Self-protection
// guards them under any directory (rules.Spec.ProtectedNames): a server
// that rewrote one would take mcpwarden out of every later session.
func ProjectFiles() []string {
	return []string{
		".mcp.json",                   // Claude Code
		".claude/settings.json",       // Claude Code: permissions, hooks, enabled servers
		".claude/settings.local.json", // Claude Code
		".cursor/mcp.json",            // Cursor (also ~/.cursor/mcp.json)
		".vscode/mcp.json",            // VS Code
		".vscode/settings.json",       // VS Code: servers under "mcp"
		"opencode.json",               // OpenCode (also ~/.config/opencode/)
		"opencode.jsonc",              // OpenCode
		"claude_desktop_config.json",  // Claude Desktop, wherever its directory is
		".gemini/settings.json",       // Gemini CLI (also ~/.gemini/)
		".codex/config.toml",          // Codex (~/.codex/config.toml)
	}
}

// UserFiles returns the client config files of the user whose home is home
// (absolute; appData is %APPDATA% on Windows) that ProjectFiles does not
// name: Claude Code's ~/.claude.json and VS Code's user settings and MCP
// servers. Nil without an absolute home.
func UserFiles(goos, home, appData string) []string {
	if !filepath.IsAbs(home) {
		return nil
	}
	code := filepath.Join(home, ".config", "Code", "User")
	switch goos {
	case "darwin":
		code = filepath.Join(home, "Library", "Application Support", "Code", "User")
	case "windows":
		code = filepath.Join(appData, "Code", "User")
	}
	out := []string{filepath.Join(home, ".claude.json")}
	if filepath.IsAbs(code) {
		out = append(out, filepath.Join(code, "mcp.json"), filepath.Join(code, "settings.json"))
	}
	return out
}
