package rules

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// An op is the comparison of one condition.
type op uint8

const (
	opEq op = iota // key=glob
	opNe           // key!=glob
	opRe           // key~=regexp
)

func (o op) String() string {
	switch o {
	case opNe:
		return "!="
	case opRe:
		return "~="
	}
	return "="
}

// A part is a piece of rule text and its byte offset in the rule.
type part struct {
	text string
	off  int
}

// A parsedCond is one `:key op pattern` segment of a rule.
type parsedCond struct {
	key  part     // as written, e.g. `options.paths[]`
	segs []string // the field names, `[]` dropped: ["options", "paths"]
	op   op
	pat  part
}

// A parsedRule is a rule split into its parts, before any pattern is compiled.
type parsedRule struct {
	server, tool part
	conds        []parsedCond
}

// A RuleError reports a rule that does not load: where it is in the config,
// its text, the 1-based column (in characters) of the problem and what is
// wrong with it.
type RuleError struct {
	Where  string // e.g. "servers.fs.policy.deny[2]"
	Rule   string
	Column int
	Msg    string
}

func (e *RuleError) Error() string {
	return fmt.Sprintf("%s: rule %q: column %d: %s", e.Where, e.Rule, e.Column, e.Msg)
}

// A syntaxError is a parse failure at a byte offset; Compile turns it into a
// RuleError.
type syntaxError struct {
	off int
	msg string
}

// column converts the byte offset off in s to a 1-based character column.
func column(s string, off int) int {
	off = min(max(off, 0), len(s))
	return utf8.RuneCountInString(s[:off]) + 1
}

// callForm matches a rule written as a call, as other tools write
// permission rules: read_file(path=/tmp/*), Read(/tmp/**).
var callForm = regexp.MustCompile(`^([A-Za-z0-9_.-]+)\((.*)\)$`)

// foreignRule is how to write s, a rule in another tool's notation
// (read_file(path=/tmp/*), mcp__fs__read_file), in this one's; "" if s
// is not in such a notation.
func foreignRule(s string) string {
	if rest, ok := strings.CutPrefix(s, "mcp__"); ok {
		if server, tool, ok := strings.Cut(rest, "__"); ok {
			return fmt.Sprintf("%q", "mcp:"+server+":"+tool)
		}
	}
	m := callForm.FindStringSubmatch(s)
	if m == nil {
		return ""
	}
	tool, args := m[1], strings.TrimSpace(m[2])
	var conds []string
	for a := range strings.SplitSeq(args, ",") {
		a = strings.TrimSpace(a)
		switch {
		case a == "":
		case strings.Contains(a, "="):
			conds = append(conds, a)
		default: // a bare pattern: the path, whatever its key
			conds = append(conds, "@path="+a)
		}
	}
	rule := "mcp:<server>:" + tool
	for _, c := range conds {
		rule += ":" + c
	}
	return fmt.Sprintf("%q (the server's name for <server>, a condition per key after a \":\")", rule)
}

// parseRule splits a rule at the `:` that start conditions. A `:` splits only
// when it is followed by `key=`, `key!=` or `key~=`, so patterns may hold
// `:` (`url=https://*`); a backslash-escaped `\:` never splits. In the tool
// part an unescaped `:` that does not start a condition is an error, since it
// is almost always a mistyped condition.
func parseRule(s string) (parsedRule, *syntaxError) {
	var r parsedRule
	if !strings.HasPrefix(s, "mcp:") {
		if hint := foreignRule(s); hint != "" {
			return r, &syntaxError{0, "a rule starts with \"mcp:\": write " + hint}
		}
		return r, &syntaxError{0, `a rule starts with "mcp:", e.g. "mcp:fs:read_file" or "mcp:*:*"`}
	}
	rest := s[4:]
	i := strings.IndexByte(rest, ':')
	if i < 0 {
		return r, &syntaxError{len(s), `missing ":<tool>" after the server; write "mcp:<server>:*" for every tool of a server`}
	}
	r.server = part{rest[:i], 4}
	if r.server.text == "" {
		return r, &syntaxError{4, `empty server; write "*" for every server`}
	}
	if err := checkServer(r.server); err != nil {
		return r, err
	}

	start := 4 + i + 1
	// The tool runs to the first split point; each condition to the next one.
	var splits []int // offsets of the splitting ':'
	for j := start; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++ // the escaped character never splits
		case ':':
			if _, _, _, ok := scanKey(s, j+1); ok {
				splits = append(splits, j)
			} else if len(splits) == 0 {
				return r, &syntaxError{j, `":" in the tool part must start a condition (:key=pattern, :key!=pattern or :key~=pattern); escape a literal colon as "\:"`}
			}
		}
	}
	toolEnd := len(s)
	if len(splits) > 0 {
		toolEnd = splits[0]
	}
	r.tool = part{s[start:toolEnd], start}
	if r.tool.text == "" {
		return r, &syntaxError{start, `empty tool; write "*" for every tool`}
	}
	if k := strings.IndexFunc(r.tool.text, unicode.IsSpace); k >= 0 {
		return r, &syntaxError{start + k, "white space in the tool name; MCP tool names contain none"}
	}

	for n, at := range splits {
		end := len(s)
		if n+1 < len(splits) {
			end = splits[n+1]
		}
		keyEnd, o, opLen, _ := scanKey(s, at+1)
		c := parsedCond{
			key: part{s[at+1 : keyEnd], at + 1},
			op:  o,
			pat: part{s[keyEnd+opLen : end], keyEnd + opLen},
		}
		for seg := range strings.SplitSeq(c.key.text, ".") {
			seg = strings.ReplaceAll(seg, "[]", "")
			c.segs = append(c.segs, seg)
		}
		r.conds = append(r.conds, c)
	}
	return r, nil
}

// scanKey reports whether s[i:] starts with `key op`, where
// key = ["@"] identifier { "." identifier | "[]" } and op is "=", "!=" or
// "~=". It returns the end of the key, the op and the op's length. A key
// starting with `@` names a fact; Compile rejects an unknown one.
func scanKey(s string, i int) (end int, o op, opLen int, ok bool) {
	start := i
	if i < len(s) && s[i] == '@' {
		start++
	}
	if start >= len(s) || !isIdentStart(s[start]) {
		return 0, 0, 0, false
	}
	j := identEnd(s, start)
	for {
		switch {
		case strings.HasPrefix(s[j:], "[]"):
			j += 2
			continue
		case j+1 < len(s) && s[j] == '.' && isIdentStart(s[j+1]):
			j = identEnd(s, j+1)
			continue
		}
		break
	}
	switch {
	case strings.HasPrefix(s[j:], "="):
		return j, opEq, 1, true
	case strings.HasPrefix(s[j:], "!="):
		return j, opNe, 2, true
	case strings.HasPrefix(s[j:], "~="):
		return j, opRe, 2, true
	}
	return 0, 0, 0, false
}

func isIdentStart(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func identEnd(s string, i int) int {
	for i < len(s) {
		c := s[i]
		if !isIdentStart(c) && !('0' <= c && c <= '9') && c != '-' {
			break
		}
		i++
	}
	return i
}

// checkServer rejects a literal server part that no server name can equal
// (names match ServerNameGrammar), so that a typo such as `mcp:FS:*`
// fails at load instead of silently never matching.
func checkServer(p part) *syntaxError {
	if !isLiteral(p.text) {
		return nil
	}
	if !ValidServerName(p.text) {
		return &syntaxError{p.off, fmt.Sprintf("%q is not a server name (lower-case letters, digits, _ and -, at most 32, starting with a letter or digit)", p.text)}
	}
	return nil
}
