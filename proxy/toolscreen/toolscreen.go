// Package toolscreen judges whether the definition of a tool, prompt,
// resource or resource template looks aimed at the model rather than at
// the person choosing tools (tool poisoning): an instruction such as
// "ignore previous …", or hidden Unicode. `validate` and `tools` flag such
// a definition, and hide_suspicious_tools hides it.
package toolscreen

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/invisible"
)

// modelPhrases are phrases of text aimed at the model rather than at the
// person choosing tools (tool poisoning), in lower case.
var modelPhrases = []string{
	"ignore previous", "ignore all previous", "ignore the previous", "ignore the above", "ignore any previous",
	"disregard previous", "disregard all previous", "disregard the above", "forget previous", "forget all previous",
	"you must", "do not tell the user", "don't tell the user", "do not mention", "without telling the user",
	"<important>", "</important>", "<system>", "system prompt", "before using this tool", "before calling any",
}

// Tool says why t's definition looks aimed at the model (an
// instruction such as "ignore previous …", or hidden Unicode: any
// character internal/invisible lists, such as tag, zero-width,
// direction-changing and variation-selector characters and fillers), or
// "" when nothing does. Every string of the definition is read, at every
// depth: the description, the title, and the input and
// output schemas' descriptions, titles, enums and defaults in nested
// properties, items, anyOf/oneOf/allOf branches and $defs. Phrases are
// looked for after the hidden characters are taken out ("i\uFE0Fgnore
// previous" reads "ignore previous"), and the hidden characters are
// flagged too. `validate` and `tools` flag such a tool, and
// hide_suspicious_tools hides it.
func Tool(t mcp.Tool) string {
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
	return suspiciousDefinition(t)
}

// Prompt is Tool for a prompt: its description, title
// and its arguments' names, titles and descriptions.
func Prompt(p mcp.Prompt) string { return suspiciousDefinition(p) }

// Resource is Tool for a resource: its name, title and
// description.
func Resource(r mcp.Resource) string { return suspiciousDefinition(r) }

// ResourceTemplate is Tool for a resource template.
func ResourceTemplate(r mcp.ResourceTemplate) string { return suspiciousDefinition(r) }

// suspiciousDefinition says what string of def, as JSON, looks aimed at
// the model, naming its place ("inputSchema.properties.opts.description"),
// or "". A definition that cannot be encoded is suspicious: its text
// cannot be read.
func suspiciousDefinition(def any) string {
	raw, err := json.Marshal(def)
	if err != nil {
		return fmt.Sprintf("cannot be read: %v", err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Sprintf("cannot be read: %v", err)
	}
	return suspiciousValue(v, "")
}

// suspiciousValue walks v, a decoded JSON value at path, in a stable order
// (object members sorted), and says what the first suspicious string,
// member name or value, is.
func suspiciousValue(v any, path string) string {
	switch v := v.(type) {
	case string:
		if why := suspiciousText(v); why != "" {
			return strings.TrimPrefix(path+" ", " ") + why
		}
	case []any:
		for i, e := range v {
			if why := suspiciousValue(e, path+"["+strconv.Itoa(i)+"]"); why != "" {
				return why
			}
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			at := strings.TrimPrefix(path+"."+k, ".")
			if why := suspiciousText(k); why != "" {
				return fmt.Sprintf("member name %q at %s %s", k, at, why)
			}
			if why := suspiciousValue(v[k], at); why != "" {
				return why
			}
		}
	}
	return ""
}

// suspiciousText says what in s looks aimed at the model, or "": the
// hidden characters it holds, and the phrases it says once they are
// taken out.
func suspiciousText(s string) string {
	var hidden string
	for i, r := range s {
		if invisible.Is(r) && !(invisible.VariationSelector(r) && emojiPresentation(s[:i])) {
			hidden = fmt.Sprintf("holds hidden character U+%04X at byte %d", r, i)
			break
		}
	}
	visible := strings.Map(func(r rune) rune {
		if invisible.Is(r) {
			return -1
		}
		return r
	}, s)
	lower := strings.ToLower(strings.Join(strings.Fields(visible), " "))
	for _, p := range modelPhrases {
		if strings.Contains(lower, p) {
			if hidden != "" {
				return fmt.Sprintf("%s and says %q", hidden, p)
			}
			return fmt.Sprintf("says %q", p)
		}
	}
	return hidden
}

// emojiPresentation reports whether the text before a variation selector
// ends with a symbol, where U+FE0E and U+FE0F are the ordinary text and
// emoji presentation ("\u26A0\uFE0F" is a warning sign): only those are
// not flagged. Between letters, or after anything else, the selector is
// hidden text.
func emojiPresentation(before string) bool {
	r, _ := utf8.DecodeLastRuneInString(before)
	return unicode.IsSymbol(r)
}
