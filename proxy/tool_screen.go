package proxy

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// modelPhrases are phrases of text aimed at the model rather than at the
// person choosing tools (tool poisoning), in lower case.
var modelPhrases = []string{
	"ignore previous", "ignore all previous", "ignore the previous", "ignore the above", "ignore any previous",
	"disregard previous", "disregard all previous", "disregard the above", "forget previous", "forget all previous",
	"you must", "do not tell the user", "don't tell the user", "do not mention", "without telling the user",
	"<important>", "</important>", "<system>", "system prompt", "before using this tool", "before calling any",
}

// SuspiciousTool says why t's description, or the description of one of
// its arguments, looks aimed at the model (an instruction such as "ignore
// previous …", or hidden Unicode: tag characters, zero-width and
// direction-changing characters), or "" when nothing does. `validate`
// and `tools` flag such a tool, and hide_suspicious_tools hides it.
func SuspiciousTool(t mcp.Tool) string {
	if why := suspiciousText(t.Description); why != "" {
		return "description " + why
	}
	props := t.InputSchema.Properties
	for _, key := range slices.Sorted(maps.Keys(props)) {
		p, _ := props[key].(map[string]any)
		if d, _ := p["description"].(string); d != "" {
			if why := suspiciousText(d); why != "" {
				return fmt.Sprintf("argument %q description %s", key, why)
			}
		}
	}
	return ""
}

// suspiciousText says what in s looks aimed at the model, or "".
func suspiciousText(s string) string {
	for i, r := range s {
		if hiddenRune(r) {
			return fmt.Sprintf("holds hidden character U+%04X at byte %d", r, i)
		}
	}
	lower := strings.ToLower(strings.Join(strings.Fields(s), " "))
	for _, p := range modelPhrases {
		if strings.Contains(lower, p) {
			return fmt.Sprintf("says %q", p)
		}
	}
	return ""
}

// hiddenRune reports whether r is invisible in most renderings yet read
// by a model: a Unicode tag character, a zero-width character, a word
// joiner or invisible operator, a byte order mark, or a bidirectional
// control.
func hiddenRune(r rune) bool {
	switch {
	case r >= 0xE0000 && r <= 0xE007F: // tags
		return true
	case r >= 0x200B && r <= 0x200F: // zero-width space, joiners, marks
		return true
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069: // bidi
		return true
	case r >= 0x2060 && r <= 0x2064, r == 0xFEFF, r == 0x180E, r == 0x00AD:
		return true
	}
	return false
}

// unsuspicious returns server's tools without those SuspiciousTool flags
// (hide_suspicious_tools), logging each one it hides. A hidden tool is
// neither listed nor callable.
func (s *Server) unsuspicious(server string, tools []mcp.Tool) []mcp.Tool {
	return slices.DeleteFunc(slices.Clone(tools), func(t mcp.Tool) bool {
		why := SuspiciousTool(t)
		if why != "" {
			s.logger.Warn("hiding a tool whose description looks aimed at the model", "tool", Canonical(server, t.Name), "why", why)
		}
		return why != ""
	})
}
