package rules

import (
	"slices"
	"strings"
	"unicode"

	"github.com/mcpwarden/mcpwarden/internal/keyfold"
)

// A ToolInfo describes one known upstream tool for Lint.
type ToolInfo struct {
	Server, Name string
	// Optional are the top-level argument keys the tool's input schema
	// declares but does not list in "required".
	Optional []string
	// Keys are all the top-level argument keys the tool's input schema
	// declares; nil when the schema declares none (nothing is known).
	Keys []string
	// StringKeys are the keys among Keys whose values are strings or
	// arrays of strings.
	StringKeys []string
}

// A Finding is one problem Lint reports.
type Finding struct {
	Where   string // e.g. "policy.allow[3]"
	Rule    string
	Message string
}

// Lint checks the policy against the known tools without deciding anything.
// It reports, per rule in config order: a rule that matches no known tool (or,
// in a server's policy, names another server); a deny rule with an `=` or
// `~=` condition on an argument a matching tool's schema marks optional (a
// call that omits it is not denied); a deny or ask rule with a condition on
// a path-like key that a matching tool does not take while it takes another
// path-like key (a deny on `path` never sees read_multiple_files's `paths`:
// use @path); a rule repeated in a gate; and an allow
// rule that can never decide because a deny or ask rule matches every call it
// matches (unreachable); then, per label, a pattern that matches no known
// tool or misses a path-like key as above, and a label no flow rule uses.
// A nil policy has no findings.
func (p *Policy) Lint(tools []ToolInfo) []Finding {
	if p == nil {
		return nil
	}
	var fs []Finding
	for _, g := range p.order {
		seen := map[string]string{}
		for kind := ListDeny; kind <= ListAllow; kind++ {
			for _, r := range g.lists[kind].rules {
				add := func(msg string) { fs = append(fs, Finding{Where: r.where, Rule: r.text, Message: msg}) }
				known := knownTools(g, r, tools)
				switch {
				case g.server != "" && !r.server.match(g.server):
					add("names another server than " + g.server + "; a rule in " + g.name + " applies only to " + g.server + "'s tools, so it never matches")
				case len(known) == 0:
					add("matches no known tool")
				}
				if kind == ListDeny {
					for _, m := range optionalConds(r, known) {
						add(m)
					}
				}
				if kind == ListDeny || kind == ListAsk {
					for _, m := range p.missingPathConds(r, known) {
						add(m)
					}
				}
				if first, ok := seen[r.text]; ok {
					add("repeats " + first)
				} else {
					seen[r.text] = r.where
				}
				if kind == ListAllow {
					if by := p.shadow(g, r, known); by != nil {
						add("is unreachable: " + by.list.String() + " rule " + quote(by.text) + " (" + by.where + ") matches every call it matches")
					}
				}
			}
		}
	}
	return append(fs, p.lintLabels(tools)...)
}

// knownTools returns the tools r matches within gate g.
func knownTools(g *gate, r *rule, tools []ToolInfo) []ToolInfo {
	var known []ToolInfo
	for _, t := range tools {
		if (g.server == "" || t.Server == g.server) && r.matchesName(t.Server, t.Name) {
			known = append(known, t)
		}
	}
	return known
}

// optionalConds returns a message for each `=` or `~=` condition of a deny
// rule whose top-level key some matching tool marks optional.
func optionalConds(r *rule, known []ToolInfo) []string {
	var msgs []string
	for i := range r.conds {
		c := &r.conds[i]
		if c.op == opNe {
			continue // `!=` matches an absent key
		}
		var names []string
		for _, t := range known {
			if slices.Contains(t.Optional, c.segs[0]) {
				names = append(names, "mcp:"+t.Server+":"+t.Name)
			}
		}
		if len(names) > 0 {
			msgs = append(msgs, "conditions on "+quote(c.segs[0])+", which "+strings.Join(names, ", ")+
				" marks optional: a call that omits it is not denied; allow what is safe instead, or use !=")
		}
	}
	return msgs
}

// shadow returns a deny or ask rule that matches every call the allow rule a
// (in gate g) matches, looking in the gates that apply whenever a does: g,
// the global gate, and the gate of a's server if a names one literally.
func (p *Policy) shadow(g *gate, a *rule, known []ToolInfo) *rule {
	gates := []*gate{g}
	if g != &p.global {
		gates = append(gates, &p.global)
	}
	if a.server.literal() && g.server == "" {
		if srv := p.servers[a.server.lit]; srv.gate != nil {
			gates = append(gates, srv.gate)
		}
	}
	for _, kind := range []List{ListDeny, ListAsk} {
		for _, sg := range gates {
			for _, d := range sg.lists[kind].rules {
				if covers(d, a, known) {
					return d
				}
			}
		}
	}
	return nil
}

// covers reports whether every call a matches also matches d: d's conditions
// are a subset of a's (a condition holding for every value of an allow holds
// for one of them), and d's names cover a's, by their text or else on every
// known tool a matches.
func covers(d, a *rule, known []ToolInfo) bool {
	for i := range d.conds {
		if !slices.ContainsFunc(a.conds, func(c cond) bool { return sameCond(&c, &d.conds[i]) }) {
			return false
		}
	}
	if coversName(d.server, a.server) && coversName(d.tool, a.tool) {
		return true
	}
	if len(known) == 0 {
		return false
	}
	for _, t := range known {
		if !d.matchesName(t.Server, t.Name) {
			return false
		}
	}
	return true
}

func coversName(d, a nameMatcher) bool {
	if a.literal() {
		return d.match(a.lit)
	}
	return d.lit == a.lit || d.lit == "*" || d.lit == "**"
}

func sameCond(a, b *cond) bool {
	return a.op == b.op && a.pattern == b.pattern && slices.Equal(a.segs, b.segs)
}

// missingPathConds returns a message for each `=` or `~=` condition of a
// deny or ask rule on a path-like key that some matching tool's schema does
// not declare while it declares another path-like key: the rule never sees
// that tool's paths. Tools whose schema declares nothing are not judged.
func (p *Policy) missingPathConds(r *rule, known []ToolInfo) []string {
	var msgs []string
	for i := range r.conds {
		c := &r.conds[i]
		if c.op == opNe || !c.pathLike || c.fact != factNone {
			continue // `!=` matches an absent key; facts are not arguments
		}
		var names []string
		for _, t := range known {
			if len(t.Keys) == 0 || slices.ContainsFunc(t.Keys, func(k string) bool { return keyfold.Equal(k, c.segs[0]) }) {
				continue
			}
			var others []string
			for _, k := range t.Keys {
				if p.pathKeys.has(k) {
					others = append(others, quote(k))
				}
			}
			if len(others) > 0 {
				names = append(names, "mcp:"+t.Server+":"+t.Name+" takes "+strings.Join(others, ", "))
			}
		}
		if len(names) > 0 {
			msgs = append(msgs, "conditions on "+quote(c.segs[0])+", but "+strings.Join(names, "; ")+
				": the rule never sees those paths; use @path (every path-like value of a call) instead")
		}
	}
	return msgs
}

// UnlistedPathKeys reports, per tool, each string argument (top-level, as
// ToolInfo.StringKeys has them) whose name says it holds a path (path,
// file, dir, folder, … among the words of the name: `outputDir`,
// `config_file`) but which is not a path-like key of the policy
// (Spec.PathKeys): the rules would compare its value as plain text, without
// cleaning, the workspace or @path. Where is the tool's canonical name.
func (p *Policy) UnlistedPathKeys(tools []ToolInfo) []Finding {
	if p == nil {
		return nil
	}
	var fs []Finding
	for _, t := range tools {
		for _, k := range t.StringKeys {
			if !p.pathKeys.has(k) && namedLikePath(k) {
				fs = append(fs, Finding{Where: "mcp:" + t.Server + ":" + t.Name, Message: "takes " + quote(k) +
					", named like a path, but it is not in path_keys: its value is matched as plain text, not as a path (not cleaned, not in @path, not confined to the workspace); add it to path_keys"})
			}
		}
	}
	return fs
}

// pathWord reports whether w, a lower-case word, makes an argument name
// read as a path.
func pathWord(w string) bool {
	switch w {
	case "path", "paths", "pathname", "filepath", "file", "files", "filename", "filenames",
		"dir", "dirs", "dirname", "directory", "directories", "folder", "folders", "cwd", "workdir":
		return true
	}
	return false
}

// namedLikePath reports whether one of the words of name (split at
// non-letters and at lower-to-upper case changes: `outputDir` is output,
// dir) is a path word. `profile` is not: it holds `file` but is one word.
func namedLikePath(name string) bool {
	var word []rune
	prev := rune(0)
	for _, r := range name + "_" {
		if !unicode.IsLetter(r) || (unicode.IsUpper(r) && unicode.IsLower(prev)) {
			if pathWord(strings.ToLower(string(word))) {
				return true
			}
			word = word[:0]
		}
		if unicode.IsLetter(r) {
			word = append(word, r)
		}
		prev = r
	}
	return false
}
