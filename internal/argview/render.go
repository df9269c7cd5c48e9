package argview

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpwarden/mcpwarden/internal/textcut"
)

// The headings of the sections Render writes, each on a line of its own.
const (
	HeadingArguments  = "Arguments, as they will be forwarded:"
	HeadingUndeclared = "Arguments the tool does not declare — the server may still read them:"
	HeadingPaths      = "Other paths, as mcpwarden decided on them:"
	// NoArguments is the one line under HeadingArguments of a call that
	// has no (declared) arguments.
	NoArguments = "(none)"
)

// The prefixes of the lines under a path value, one per form.
const (
	prefixLexical = "  which is "
	prefixOnDisk  = "  on disk: "
	prefixAlso    = "  also read as "
	// LineUnknown is the line under a path value whose location mcpwarden
	// cannot know (a relative path without a root, `~` without a home, a
	// URI other than `file:`): no allow rule matched it.
	LineUnknown = "  location unknown to mcpwarden"
)

// A Reading is one absolute reading of a path-like value: joined to a
// root (or home, or decoded from a `file:` URI) and cleaned, and where
// that leads on disk with symlinks followed, when mcpwarden resolved it.
type Reading struct {
	Lexical string `json:"lexical"`
	OnDisk  string `json:"on_disk,omitempty"`
}

// A Path is a path-like value of a call with every form mcpwarden decided
// it on (see rules.PathForm).
type Path struct {
	// Value is the value as sent.
	Value string `json:"value"`
	// Readings are its absolute readings.
	Readings []Reading `json:"readings,omitempty"`
	// Also are the other forms it was decided on (its NFC form).
	Also []string `json:"also,omitempty"`
	// Unknown is set when some reading's location cannot be known.
	Unknown bool `json:"unknown,omitempty"`
}

// formLines returns the lines under p's value: one per form that differs
// from the value, and LineUnknown when a location is unknown.
func (p Path) formLines(max int) []string {
	var out []string
	shown := map[string]bool{p.Value: true}
	add := func(prefix, s string) {
		if !shown[s] {
			shown[s] = true
			out = append(out, prefix+cut(Quote(s), max))
		}
	}
	for _, r := range p.Readings {
		add(prefixLexical, r.Lexical)
		if r.OnDisk != "" && r.OnDisk != r.Lexical {
			add(prefixOnDisk, r.OnDisk)
		}
	}
	for _, a := range p.Also {
		add(prefixAlso, a)
	}
	if p.Unknown {
		out = append(out, LineUnknown)
	}
	return out
}

// A Call is what Render shows.
type Call struct {
	// Arguments are the arguments as they will be forwarded.
	Arguments map[string]any
	// Schema is the tool's inputSchema, decoded from JSON; nil when it is
	// not known (then no argument is listed as undeclared).
	Schema map[string]any
	// Paths are the call's path-like values with their forms.
	Paths []Path
	// PathKey reports whether a key is path-like: the strings under it are
	// never hidden, even when they look like a credential. Nil means none.
	PathKey func(key string) bool
}

// A View is a call rendered: its lines, and how many characters cuts hid.
type View struct {
	Lines []string
	Cut   int
}

// Render lays c out as lines: HeadingArguments, then each declared
// argument on one line (`"key": value`, sorted by key) followed by the
// lines of its path's forms when it is a path string; then, when there
// are any, HeadingUndeclared and one line per undeclared key at any depth
// (`"opts"."x": value`, its forms too when it is a path string at the top
// level); then, when there are any, HeadingPaths and each other path value
// with forms, quoted, followed by its forms. The lines are a fixed
// function of that structure: no key or value can add, remove or reorder
// one. Every key and value is cut to max characters (0: not cut), saying
// how many more there are; credentials in values are hidden (see Value).
func Render(c Call, max int) View {
	var v View
	cutAt := func(s string) string {
		out := cut(s, max)
		if out != s {
			_, n := textcut.Head(s, max)
			v.Cut += n
		}
		return out
	}
	byValue := map[string]Path{}
	for _, p := range c.Paths {
		if len(p.formLines(0)) > 0 {
			byValue[p.Value] = p
		}
	}
	inline := map[string]bool{}
	argLine := func(key string, val any) []string {
		line := []string{cutAt(Quote(key)) + ": " + cutAt(c.value(key, val))}
		if s, ok := val.(string); ok && c.pathKey(key) {
			if p, ok := byValue[s]; ok {
				line = append(line, p.formLines(max)...)
				inline[s] = true
			}
		}
		return line
	}

	top, nested := undeclared(c.Schema, c.Arguments, c.PathKey)
	v.Lines = append(v.Lines, HeadingArguments)
	n := len(v.Lines)
	for _, k := range slices.Sorted(maps.Keys(c.Arguments)) {
		if !top[k] {
			v.Lines = append(v.Lines, argLine(k, c.Arguments[k])...)
		}
	}
	if len(v.Lines) == n {
		v.Lines = append(v.Lines, NoArguments)
	}
	if len(top)+len(nested) > 0 {
		v.Lines = append(v.Lines, HeadingUndeclared)
		for _, k := range slices.Sorted(maps.Keys(top)) {
			v.Lines = append(v.Lines, argLine(k, c.Arguments[k])...)
		}
		for _, u := range nested {
			v.Lines = append(v.Lines, cutAt(u.path)+": "+cutAt(Value(u.value, u.pathLike, c.PathKey)))
		}
	}
	var rest []Path
	for _, p := range c.Paths {
		if _, ok := byValue[p.Value]; ok && !inline[p.Value] {
			rest = append(rest, p)
			inline[p.Value] = true
		}
	}
	if len(rest) > 0 {
		v.Lines = append(v.Lines, HeadingPaths)
		for _, p := range rest {
			v.Lines = append(v.Lines, cutAt(Quote(p.Value)))
			v.Lines = append(v.Lines, p.formLines(max)...)
		}
	}
	return v
}

func (c Call) pathKey(k string) bool { return isPathKey(c.PathKey, k) }

// cut returns s cut to max characters with how many more there are, or s
// when it is no longer than max or max is 0.
func cut(s string, max int) string {
	if max <= 0 {
		return s
	}
	head, n := textcut.Head(s, max)
	if n == 0 {
		return s
	}
	return fmt.Sprintf("%s… (%d more characters)", head, n)
}

// Cut is the cut Render applies, for a line rendered whole (max 0) and cut
// later: s itself when it has at most max characters, else its first max
// and how many more there are.
func Cut(s string, max int) string { return cut(s, max) }

// value renders the value v under key (see Value).
func (c Call) value(key string, v any) string {
	var b strings.Builder
	writeValue(&b, v, c.pathKey(key), c.PathKey)
	return b.String()
}

// Value renders v, a value decoded from JSON, on one line: strings quoted
// by Quote, objects with quoted keys in sorted order, `{"a": 1, "b": [2,
// 3]}`. A credential the secret scanner finds in a string is replaced by
// an unquoted marker naming its kind and length,
// `"Bearer " + <hidden: auth_header, 40 characters>`: a string value is
// always quoted, so no value can pass for a marker. The strings of a
// path-like value (pathLike, and every string under a key pathKey reports
// at any depth) are never hidden: where a call acts is what the human
// must see. pathKey may be nil.
func Value(v any, pathLike bool, pathKey func(string) bool) string {
	var b strings.Builder
	writeValue(&b, v, pathLike, pathKey)
	return b.String()
}

func writeValue(b *strings.Builder, v any, pathLike bool, pathKey func(string) bool) {
	switch t := v.(type) {
	case string:
		if pathLike {
			b.WriteString(Quote(t))
			return
		}
		b.WriteString(hideCredentials(t))
	case map[string]any:
		b.WriteByte('{')
		for i, k := range slices.Sorted(maps.Keys(t)) {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(Quote(k))
			b.WriteString(": ")
			writeValue(b, t[k], pathLike || (pathKey != nil && pathKey(k)), pathKey)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteString(", ")
			}
			writeValue(b, e, pathLike, pathKey)
		}
		b.WriteByte(']')
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(t))
	case json.Number:
		b.WriteString(Escape(t.String()))
	default:
		data, err := json.Marshal(t)
		if err != nil {
			b.WriteString("<cannot be shown>")
			return
		}
		b.WriteString(Escape(string(data)))
	}
}
