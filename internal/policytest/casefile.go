// Package policytest reads and runs policy unit tests: case files of
// requests and the decision each must get (`mcpwarden test`), decided by
// the same code as check and the running proxy (app.Setup.Decide). It
// reports as go test does, in text or as go test -json's events. It knows
// nothing of the command line.
package policytest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	yaml "go.yaml.in/yaml/v3"

	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/internal/jsonargs"
	"github.com/mcpwarden/mcpwarden/internal/spelling"
	"github.com/mcpwarden/mcpwarden/rules"
)

// A File is a parsed case file.
type File struct {
	// Name is the file as errors and reports name it (the path given).
	Name  string
	Cases []Case
}

// A Case is one request and the decision it must get. Only Name, Tool
// and Expect are required; the zero value of every other field leaves it
// out (no arguments, no profile, nothing armed, under every limit, any
// rule).
type Case struct {
	Name string
	// Line is where the case is written: the line of its first key.
	Line int
	// Tool is the request's canonical name as written: mcp:fs:read_file,
	// or a request kind, mcp:fs:resources/read.
	Tool string
	// Arguments are the request's arguments as the proxy parses them
	// (jsonargs.Parse); never nil.
	Arguments map[string]any
	Expect    rules.Decision
	// Rule, if not "", is the text of the rule that must decide: a rule as
	// written in the config, or default, outside_workspace,
	// builtin:self-protection.
	Rule      string
	Profile   string
	Principal string
	// After are flow labels armed in the session, as check's --after.
	After []string
	// Roots are the client's MCP roots, absolute directories: the
	// workspace of a policy with workspace_from_roots.
	Roots []string
	// OverLimit decides the request as one beyond the max of every limit
	// it counts against, as check's --over-limit.
	OverLimit bool
	// at is where each key's value is written, for errors about it.
	at map[string]pos
}

// A pos is a place in a case file: a line and a column, from 1.
type pos struct{ line, col int }

// caseKeys are the keys a case may have, and whether each is required.
var caseKeys = map[string]bool{
	"name": true, "tool": true, "arguments": false, "expect": true, "rule": false,
	"profile": false, "principal": false, "after": false, "roots": false, "over_limit": false,
}

// maxArgumentNodes bounds the YAML nodes of one case's arguments, aliases
// expanded, so that a few lines of anchors cannot take the machine.
const maxArgumentNodes = 10000

// Parse reads the case file data, named name in errors. Every problem is
// reported, each as name:line:col: the key and what to write instead;
// unknown keys name the key meant. A file with no cases is an error: a
// test that tests nothing passes by mistake.
func Parse(name string, data []byte) (*File, error) {
	p := parser{file: name}
	f := &File{Name: name}
	var doc, more yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	err := dec.Decode(&doc)
	if err == nil {
		// Cases in a second document would never run.
		if err = dec.Decode(&more); err == nil {
			return nil, p.errAt(&more, "a second YAML document: write every case in one YAML document, under one cases:")
		}
	}
	if err != nil && !errors.Is(err, io.EOF) {
		place, msg := config.ErrorPlace(data, err)
		if place != "" {
			place = ":" + place
		}
		return nil, fmt.Errorf("%s%s: invalid YAML: %s", name, place, msg)
	}
	if len(doc.Content) == 0 || doc.Content[0].ShortTag() == "!!null" {
		return nil, fmt.Errorf("%s: no cases: write cases: followed by a list of cases, each with name, tool and expect", name)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, p.errAt(root, "want a section holding cases:, got %s", describe(root))
	}
	top, _ := p.section(root, "", []string{"cases"})
	list := top["cases"]
	switch {
	case list == nil && len(p.errs) == 0:
		p.add(root, "no cases: write cases: followed by a list of cases, each with name, tool and expect")
	case list != nil && list.Kind != yaml.SequenceNode:
		p.add(list, "cases: want a list of cases (each item starting with -), got %s", describe(list))
	case list != nil:
		seen := map[string]int{}
		for i, n := range list.Content {
			c, ok := p.parseCase(i, n)
			if !ok {
				continue
			}
			if line, dup := seen[c.Name]; dup {
				p.addAt(c.at["name"], "cases[%d].name: %q names the case on line %d too; give each case a name of its own", i, c.Name, line)
				continue
			}
			seen[c.Name] = c.Line
			f.Cases = append(f.Cases, c)
		}
		if len(list.Content) == 0 {
			p.add(list, "cases: the list is empty; write at least one case")
		}
	}
	if err := errors.Join(p.errs...); err != nil {
		return nil, err
	}
	return f, nil
}

// A parser collects the errors of one file.
type parser struct {
	file string
	errs []error
}

func (p *parser) errAt(n *yaml.Node, format string, args ...any) error {
	return fmt.Errorf("%s:%d:%d: %s", p.file, n.Line, n.Column, fmt.Sprintf(format, args...))
}

func (p *parser) add(n *yaml.Node, format string, args ...any) {
	p.errs = append(p.errs, p.errAt(n, format, args...))
}

func (p *parser) addAt(at pos, format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf("%s:%d:%d: %s", p.file, at.line, at.col, fmt.Sprintf(format, args...)))
}

// section returns the values of n, a mapping, by key, recording a key
// that is none of known (naming the key meant) or is written twice (a
// second expect would silently replace the first). prefix names n's place
// in errors: "cases[2].". meant holds the known keys that unknown ones
// were taken for.
func (p *parser) section(n *yaml.Node, prefix string, known []string) (values map[string]*yaml.Node, meant map[string]bool) {
	values, meant = map[string]*yaml.Node{}, map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch _, dup := values[k.Value]; {
		case !slices.Contains(known, k.Value):
			msg := fmt.Sprintf("%s%s: unknown key", prefix, shown(k.Value))
			if m := spelling.Closest(k.Value, known); m != "" {
				msg += fmt.Sprintf("; did you mean %s%s?", prefix, m)
				meant[m] = true
			} else {
				msg += "; the keys here are " + strings.Join(known, ", ")
			}
			p.add(k, "%s", msg)
		case dup:
			p.add(k, "%s%s: written twice; keep one", prefix, shown(k.Value))
		default:
			values[k.Value] = v
		}
	}
	return values, meant
}

// parseCase reads the i-th case, n; ok is false if it has errors (recorded).
func (p *parser) parseCase(i int, n *yaml.Node) (c Case, ok bool) {
	before := len(p.errs)
	key := fmt.Sprintf("cases[%d]", i)
	if n.Kind != yaml.MappingNode {
		p.add(n, "%s: want a case: a section with name, tool and expect, got %s", key, describe(n))
		return c, false
	}
	c.Line, c.at = n.Line, map[string]pos{}
	known := slices.Sorted(maps.Keys(caseKeys))
	if name := caseName(n); name != "" {
		key = fmt.Sprintf("cases[%d] (%s)", i, shown(name))
	}
	values, meant := p.section(n, key+".", known)
	for k, v := range values {
		c.at[k] = pos{v.Line, v.Column}
	}
	for _, k := range known {
		if caseKeys[k] && values[k] == nil && !meant[k] {
			p.add(n, "%s: %s is required; every case has name, tool and expect", key, k)
		}
	}
	// scalar reports whether the key's value is text (a null is not).
	scalar := func(v *yaml.Node) bool { return v.Kind == yaml.ScalarNode && v.ShortTag() != "!!null" }
	text := func(k string) string {
		v := values[k]
		if v == nil {
			return ""
		}
		if !scalar(v) {
			p.add(v, "%s.%s: want text, got %s", key, k, describe(v))
			return ""
		}
		return v.Value
	}
	c.Name = text("name")
	c.Tool, c.Rule, c.Profile, c.Principal = text("tool"), text("rule"), text("profile"), text("principal")
	if v := values["tool"]; v != nil && c.Tool == "" && scalar(v) {
		p.add(v, "%s.tool: want a canonical name such as mcp:fs:read_file", key)
	}
	if v := values["name"]; v != nil && scalar(v) && (c.Name == "" || shown(c.Name) != c.Name) {
		p.add(v, "%s.name: want a name saying what the case is about, on one line of printable text", key)
	}
	if v := values["expect"]; v != nil {
		d, err := rules.ParseDecision(text("expect"))
		if err != nil && scalar(v) {
			msg := err.Error()
			if meant := spelling.Closest(v.Value, []string{"allow", "ask", "deny"}); meant != "" {
				msg += fmt.Sprintf("; did you mean %s?", meant)
			}
			p.add(v, "%s.expect: %s", key, msg)
		}
		c.Expect = d
	}
	if v := values["after"]; v != nil {
		c.After = p.texts(key+".after", v, "a label or a list of labels, e.g. after: [untrusted_input]")
	}
	if v := values["roots"]; v != nil {
		c.Roots = p.texts(key+".roots", v, "a directory or a list of them, e.g. roots: [/home/you/project]")
		for _, r := range c.Roots {
			if !filepath.IsAbs(r) {
				p.add(v, "%s.roots: %q is not absolute; a client's roots are absolute directories", key, r)
			}
		}
	}
	if v := values["over_limit"]; v != nil {
		if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!bool" {
			p.add(v, "%s.over_limit: want true or false, got %s", key, describe(v))
		} else {
			c.OverLimit, _ = strconv.ParseBool(strings.ToLower(v.Value))
		}
	}
	c.Arguments = map[string]any{}
	if v := values["arguments"]; v != nil {
		args, err := arguments(v)
		if err != nil {
			p.add(v, "%s.arguments: %v", key, err)
		}
		c.Arguments = args
	}
	return c, len(p.errs) == before
}

// caseName is the name of n, a case, if written as text; else "".
func caseName(n *yaml.Node) string {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k, v := n.Content[i], n.Content[i+1]; k.Value == "name" && v.Kind == yaml.ScalarNode && v.ShortTag() == "!!str" {
			return v.Value
		}
	}
	return ""
}

// texts reads v, one text or a list of them; what says what they are.
func (p *parser) texts(key string, v *yaml.Node, what string) []string {
	items := []*yaml.Node{v}
	if v.Kind == yaml.SequenceNode {
		items = v.Content
	}
	var out []string
	for _, it := range items {
		if it.Kind != yaml.ScalarNode || it.ShortTag() == "!!null" || it.Value == "" {
			p.add(it, "%s: want %s; got %s", key, what, describe(it))
			continue
		}
		out = append(out, it.Value)
	}
	return out
}

// arguments reads a case's arguments, a YAML section or a JSON object in
// text, into what the proxy would make of the same arguments sent as
// JSON: the section is written as JSON and parsed by jsonargs, so that a
// case is held to the proxy's strictness (keys a server folds together,
// NUL, depth).
func arguments(v *yaml.Node) (map[string]any, error) {
	var raw []byte
	if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!str" {
		raw = []byte(v.Value)
	} else {
		budget := maxArgumentNodes
		val, err := jsonValue(v, 0, &budget)
		if err != nil {
			return nil, err
		}
		if _, ok := val.(map[string]any); !ok && val != nil {
			return nil, fmt.Errorf("want a section of names and values, e.g. arguments: {path: ./README.md}, or a JSON object in quotes; got %s", describe(v))
		}
		if raw, err = json.Marshal(val); err != nil {
			return nil, err
		}
	}
	args, _, err := jsonargs.Parse(raw)
	return args, err
}

// jsonValue is the JSON value of n, a YAML node; budget counts down the
// nodes left to visit.
func jsonValue(n *yaml.Node, depth int, budget *int) (any, error) {
	*budget--
	if *budget < 0 {
		return nil, fmt.Errorf("more than %d values (anchors and aliases count each time they are used)", maxArgumentNodes)
	}
	if depth > jsonargs.MaxDepth {
		return nil, fmt.Errorf("nested deeper than %d levels", jsonargs.MaxDepth)
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, fmt.Errorf("line %d: an alias to nothing", n.Line)
		}
		return jsonValue(n.Alias, depth+1, budget)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := jsonValue(c, depth+1, budget)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" {
				return nil, fmt.Errorf("line %d: want a name as the key, got %s", k.Line, describe(k))
			}
			if _, dup := out[k.Value]; dup {
				return nil, fmt.Errorf("line %d: %q is written twice (the proxy refuses a request with a key twice); keep one", k.Line, k.Value)
			}
			v, err := jsonValue(n.Content[i+1], depth+1, budget)
			if err != nil {
				return nil, err
			}
			out[k.Value] = v
		}
		return out, nil
	case yaml.ScalarNode:
		return scalar(n)
	}
	return nil, fmt.Errorf("line %d: want a value, got %s", n.Line, describe(n))
}

// scalar is the JSON value of n, a YAML scalar: text as written for
// anything but null, true and false and numbers.
func scalar(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool", "!!int", "!!float":
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		if f, ok := v.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
			return nil, fmt.Errorf("line %d: %s is no JSON number; quote it to send it as text", n.Line, n.Value)
		}
		return v, nil
	}
	return n.Value, nil
}

// shown is s as an error shows it: as written if it is one line of
// printable text, else quoted.
func shown(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

// describe names what n holds, for errors about a value of the wrong kind.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a section"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "nothing"
}
