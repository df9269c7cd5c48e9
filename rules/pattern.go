package rules

import (
	"errors"
	"regexp"
	"strings"

	"github.com/gobwas/glob"
)

// isLiteral reports whether a glob has no meta characters, so that it matches
// only itself and can be indexed by its text.
func isLiteral(s string) bool {
	return !strings.ContainsAny(s, `*?[]{}\`)
}

// A nameMatcher matches server or tool names: a literal compares strings, a
// glob has `*` match any run of characters (names have no separators).
type nameMatcher struct {
	lit string
	g   *glob.Pattern // nil for a literal
}

func compileName(p part) (nameMatcher, *syntaxError) {
	if isLiteral(p.text) {
		return nameMatcher{lit: p.text}, nil
	}
	g, err := glob.Compile(p.text)
	if err != nil {
		return nameMatcher{}, globError(p, err)
	}
	return nameMatcher{lit: p.text, g: g}, nil
}

func (m nameMatcher) match(s string) bool {
	if m.g == nil {
		return m.lit == s
	}
	return m.g.Match(s)
}

func (m nameMatcher) literal() bool { return m.g == nil }

// A valuePattern matches the text of one argument value.
//
// On path-like keys a glob is compiled with `/` as separator and globstar on:
// `*` and `?` stay within a segment, `**` crosses segments and `**/` matches
// zero or more whole segments (so `**/.env` matches `.env` too). A pattern
// ending in `/**` also matches the directory itself (`/etc/**` matches
// `/etc`), so that a deny on a tree also covers an operation on its root,
// such as moving it. On other keys `*` matches any run of characters,
// newlines included.
//
// A `~=` pattern is an RE2 regexp anchored at both ends and compiled with the
// `s` flag, so `.` matches a newline as a glob's `*` does and a deny such as
// `cmd~=.*rm .*` cannot be dodged with "echo\nrm x"; write `(?-s)` to undo it.
type valuePattern struct {
	g    *glob.Pattern
	self *glob.Pattern // for a path glob ending in "/**": the directory itself
	re   *regexp.Regexp
}

func (v *valuePattern) match(s string) bool {
	switch {
	case v.re != nil:
		return v.re.MatchString(s)
	case v.g.Match(s):
		return true
	default:
		return v.self != nil && v.self.Match(s)
	}
}

var pathCompiler = glob.Compiler{Separators: []rune{'/'}, Globstar: true}

// compileValue compiles a condition's pattern; fold makes a regexp
// case-insensitive (a glob's text is folded by the caller).
func compileValue(p part, o op, pathLike, fold bool) (valuePattern, *syntaxError) {
	if o == opRe {
		// Compile the pattern alone first: wrapping an unbalanced one such as
		// `a)|(b` would otherwise yield a valid but unanchored regexp.
		if _, err := regexp.Compile(p.text); err != nil {
			return valuePattern{}, &syntaxError{p.off, "invalid regexp: " + strings.TrimPrefix(err.Error(), "error parsing regexp: ")}
		}
		flags := "s"
		if fold {
			flags = "si"
		}
		re, err := regexp.Compile(`^(?` + flags + `:` + p.text + `)$`)
		if err != nil {
			return valuePattern{}, &syntaxError{p.off, "invalid regexp: " + err.Error()}
		}
		return valuePattern{re: re}, nil
	}
	if !pathLike {
		g, err := glob.Compile(p.text)
		if err != nil {
			return valuePattern{}, globError(p, err)
		}
		return valuePattern{g: g}, nil
	}
	g, err := pathCompiler.Compile(p.text)
	if err != nil {
		return valuePattern{}, globError(p, err)
	}
	v := valuePattern{g: g}
	if dir, ok := strings.CutSuffix(p.text, "/**"); ok && dir != "" && !strings.HasSuffix(dir, `\`) {
		if self, err := pathCompiler.Compile(dir); err == nil {
			v.self = self
		}
	}
	return v, nil
}

const globHint = `; escape a literal *, ?, [, ], {, } or \ with a backslash`

func globError(p part, err error) *syntaxError {
	if se, ok := errors.AsType[*glob.SyntaxError](err); ok {
		return &syntaxError{p.off + se.Offset, "invalid glob: " + se.Reason + globHint}
	}
	return &syntaxError{p.off, "invalid glob: " + err.Error() + globHint}
}
