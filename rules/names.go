package rules

import "strings"

// The grammars of the names mcpwarden deals in. A server name (a key of
// servers, and of profiles) is part of every canonical tool name,
// mcp:<server>:<tool>, and so of every rule; a wire name is what a client
// sees and calls, made from the server name and the tool's upstream name
// but constrained by the clients, not by rules. They are different facts:
// "GitHub__Search" is a good wire name and no server name, and a server
// name is at most 32 characters where a wire name may have 64. Config,
// rules and the proxy all check names against these definitions.

// ServerNameGrammar is the form of a server name, as a regular expression
// for messages: lower-case letters, digits, _ and -, at most 32, starting
// with a letter or digit.
const ServerNameGrammar = `^[a-z0-9][a-z0-9_-]{0,31}$`

// WireNameGrammar is the form of a tool's wire name, as a regular
// expression for messages: the tool name clients accept.
const WireNameGrammar = `^[a-zA-Z0-9_-]{1,64}$`

// MaxWireName is the length of the longest wire name clients accept.
const MaxWireName = 64

// ValidServerName reports whether s matches ServerNameGrammar.
func ValidServerName(s string) bool {
	if len(s) == 0 || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case (c == '_' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// ServerNameFor is the server name closest to name, a name written
// elsewhere (a client's entry, a key that breaks ServerNameGrammar): lower
// case, every character outside [a-z0-9_-] replaced by '-', leading '-'
// and '_' dropped, at most 32 characters; "server" if nothing is left.
func ServerNameFor(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	k := strings.TrimLeft(b.String(), "-_")
	if len(k) > 32 {
		k = strings.TrimRight(k[:32], "-_")
	}
	if k == "" {
		k = "server"
	}
	return k
}

// ValidWireName reports whether s matches WireNameGrammar.
func ValidWireName(s string) bool {
	return len(s) <= MaxWireName && WireSafe(s)
}

// WireSafe reports whether s is not empty and holds only the characters
// of wire names (letters, digits, _ and -), at any length: a part of a
// wire name, such as the separator between server and tool.
func WireSafe(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Canonical returns the canonical name of a tool, mcp:<server>:<tool>:
// the name rules match and the audit log records.
func Canonical(server, tool string) string {
	return "mcp:" + server + ":" + tool
}
