package suggest

import (
	"cmp"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/gobwas/glob"

	"github.com/mcpwarden/mcpwarden/internal/hostport"
	"github.com/mcpwarden/mcpwarden/internal/recorded"
	"github.com/mcpwarden/mcpwarden/rules"
)

// A shape is what a suggested rule says of one request: its server and
// tool, the conditions it fixes exactly (URL schemes and hosts, commands,
// a connection's host and port), and the paths it must cover, each with
// every form the upstream may read it in.
type shape struct {
	server, tool string
	fixed        map[string][]string   // condition key → literal values, sorted
	paths        map[string][]pathForm // condition key → absolute path forms, sorted
}

// A pathForm is one form of a recorded path value (rules.PathForm).
type pathForm struct{ value, form string }

// pathFact is the condition key of every path of a request: the paths
// under path-like keys and the `file:` URIs under URL-like keys.
const pathFact = "@path"

// shapeOf is the shape of c under p, or why no rule should be suggested
// for it.
func shapeOf(p *rules.Policy, c rules.Call) (shape, string) {
	s := shape{server: c.Server, tool: c.Tool, fixed: map[string][]string{}, paths: map[string][]pathForm{}}
	if c.Tool == rules.ToolConnect {
		host, _ := c.Arguments["host"].(string)
		port := fmt.Sprint(c.Arguments["port"])
		if host == "" || recorded.IsRedacted(host) {
			return s, "a connection without a host that can be read; not suggested"
		}
		s.fixed["host"], s.fixed["port"] = []string{host}, []string{port}
		return s, ""
	}
	fileURIs, named := false, 0 // named: the path values a condition on their key names
	reached := 0                // the URLs and commands a condition names
	var why string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			v, key := m[k], prefix+k
			switch {
			case why != "":
				return
			case (p.IsPathKey(k) || p.IsURLKey(k) || p.IsCommandKey(k)) && !writable(key):
				why = fmt.Sprintf("the argument key %q cannot be written in a rule; not suggested", key)
			case p.IsPathKey(k):
				forms, known := p.PathForms(rules.Call{Server: c.Server, Tool: c.Tool, Arguments: map[string]any{k: v}, UpstreamRoots: c.UpstreamRoots})
				named += len(forms)
				why = pathsOf(forms, known, key, func(f pathForm) { s.paths[key] = append(s.paths[key], f) })
			case p.IsURLKey(k):
				reached += len(stringsOf(v))
				for _, u := range stringsOf(v) {
					if strings.HasPrefix(strings.ToLower(u), "file:") {
						fileURIs = true // a path, named by @path below
						continue
					}
					// Only the scheme and host are named: a password
					// redacted out of the URL does not matter.
					scheme, host, ok := schemeHost(u)
					if recorded.IsRedacted(scheme+"://"+host) || !ok && recorded.IsRedacted(u) {
						why = whyRedacted + " at " + key + "; not suggested"
						return
					}
					if !ok {
						why = fmt.Sprintf("%s %q is not a URL with a host; not suggested", key, u)
						return
					}
					s.fixed[key+".scheme"] = append(s.fixed[key+".scheme"], scheme)
					s.fixed[key+".host"] = append(s.fixed[key+".host"], host)
				}
			case p.IsCommandKey(k):
				reached += len(stringsOf(v))
				for _, cmd := range stringsOf(v) {
					if recorded.IsRedacted(cmd) {
						why = whyRedacted + " at " + key + "; not suggested"
						return
					}
					s.fixed[key] = append(s.fixed[key], cmd)
				}
			default:
				// Arrays are transparent to a rule's key: requests.url
				// reaches the url of every object of requests.
				switch t := v.(type) {
				case map[string]any:
					walk(key+".", t)
				case []any:
					for _, e := range t {
						if sub, ok := e.(map[string]any); ok {
							walk(key+".", sub)
						}
					}
				}
			}
		}
	}
	walk("", c.Arguments)
	if why != "" {
		return s, why
	}
	if n := keyed(c.Arguments, func(k string) bool { return p.IsURLKey(k) || p.IsCommandKey(k) }); n != reached {
		return s, "a URL or command no rule's key can reach (an array in an array, an object); not suggested"
	}
	// A path no condition on its key names (a file: URI under a URL-like
	// key, a path in an array of objects) is named by @path, which holds
	// every path of the call: then it names them all.
	if all, known := p.PathForms(c); fileURIs || len(all) != named {
		s.paths = map[string][]pathForm{}
		if why := pathsOf(all, known, pathFact, func(f pathForm) { s.paths[pathFact] = append(s.paths[pathFact], f) }); why != "" {
			return s, why
		}
	}
	for k := range s.fixed {
		s.fixed[k] = sortedSet(s.fixed[k])
	}
	for k, forms := range s.paths {
		slices.SortFunc(forms, func(a, b pathForm) int {
			return cmp.Or(strings.Compare(a.form, b.form), strings.Compare(a.value, b.value))
		})
		s.paths[k] = slices.Compact(forms)
	}
	return s, ""
}

// keyed counts the values under the keys is reports, anywhere in v: a
// string, or each element of an array, counts one; anything else under
// such a key counts one too, and is not searched further.
func keyed(v any, is func(string) bool) int {
	n := 0
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if !is(k) {
				n += keyed(e, is)
				continue
			}
			if a, ok := e.([]any); ok {
				n += len(a)
			} else {
				n++
			}
		}
	case []any:
		for _, e := range t {
			n += keyed(e, is)
		}
	}
	return n
}

// writable reports whether a rule can name the dotted argument key: each
// of its parts an identifier (letters, digits, `_` and `-`, not first a
// digit or `-`).
func writable(key string) bool {
	for seg := range strings.SplitSeq(key, ".") {
		if seg == "" || !(seg[0] == '_' || 'a' <= seg[0] && seg[0] <= 'z' || 'A' <= seg[0] && seg[0] <= 'Z') {
			return false
		}
		for i := 1; i < len(seg); i++ {
			c := seg[i]
			if !(c == '_' || c == '-' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
				return false
			}
		}
	}
	return true
}

// pathsOf adds the forms of the path values at key to add, or says why
// they cannot be covered by a rule.
func pathsOf(forms []rules.PathForm, known bool, key string, add func(pathForm)) string {
	for _, f := range forms {
		if recorded.IsRedacted(f.Value) {
			return whyRedacted + " at " + key + "; not suggested"
		}
		if !f.Known || len(f.Forms) == 0 {
			return fmt.Sprintf("the location of %s %q cannot be known (a relative path without a root, ~, another URI), so no allow rule covers it; not suggested", key, f.Value)
		}
		for _, form := range f.Forms {
			add(pathForm{f.Value, form})
		}
	}
	if !known {
		return fmt.Sprintf("%s holds something other than a path; not suggested", key)
	}
	return ""
}

// schemeHost returns the scheme and host of u as the rules read a URL's
// parts: lower case, the host normalised (hostport.NormalizeHost).
func schemeHost(u string) (scheme, host string, ok bool) {
	// The user info is dropped first: the log may hold it redacted, in
	// characters a URL cannot have.
	if scheme, rest, found := strings.Cut(u, "://"); found {
		end := strings.IndexAny(rest, "/?#")
		if end < 0 {
			end = len(rest)
		}
		if at := strings.LastIndexByte(rest[:end], '@'); at >= 0 {
			u = scheme + "://" + rest[at+1:]
		}
	}
	pu, err := url.Parse(u)
	if err != nil || pu.Scheme == "" || pu.Hostname() == "" {
		return "", "", false
	}
	host, ok = hostport.NormalizeHost(pu.Hostname())
	return strings.ToLower(pu.Scheme), host, ok
}

// stringsOf returns the strings of v: v itself, or the strings of an
// array.
func stringsOf(v any) []string {
	switch t := v.(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// key is the shape's grouping key: requests of one server and tool with
// the same fixed conditions and paths in the same places (see place) are
// covered by one rule.
func (s shape) key(place placer) string {
	var b strings.Builder
	b.WriteString(rules.Canonical(s.server, literalName(s.tool)))
	for _, k := range slices.Sorted(maps.Keys(s.fixed)) {
		fmt.Fprintf(&b, "\x00%s=%q", k, s.fixed[k])
	}
	for _, k := range slices.Sorted(maps.Keys(s.paths)) {
		var places []string
		for _, f := range s.paths[k] {
			places = append(places, place.of(s.server, f.form))
		}
		fmt.Fprintf(&b, "\x00%s@%q", k, sortedSet(places))
	}
	return b.String()
}

// literal is a pattern matching exactly s: glob meta characters (and the
// comma of an alternation) escaped, and a `:` that would start a condition
// (`:key=`) escaped too.
func literal(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ':' && startsCondition(s[i+1:]):
			b.WriteString(`\:`)
		case c == ',':
			b.WriteString(`\,`)
		default:
			b.WriteString(glob.QuoteMeta(s[i : i+1]))
		}
	}
	return b.String()
}

// literalName is literal for a rule's tool part, where every `:` is
// escaped: one that starts no condition is a load error there.
func literalName(s string) string {
	return strings.ReplaceAll(literal(strings.ReplaceAll(s, ":", "\x00")), "\x00", `\:`)
}

// startsCondition reports whether s starts as a rule's condition does,
// `key=`, `key!=` or `key~=` (a key an identifier or `@` fact, with dots
// and `[]`), so that a `:` before it would split the rule.
func startsCondition(s string) bool {
	s = strings.TrimPrefix(s, "@")
	if s == "" || !(s[0] == '_' || 'a' <= s[0] && s[0] <= 'z' || 'A' <= s[0] && s[0] <= 'Z') {
		return false
	}
	i := 0
	for i < len(s) && (s[i] == '_' || s[i] == '-' || s[i] == '.' || s[i] == '[' || s[i] == ']' ||
		'a' <= s[i] && s[i] <= 'z' || 'A' <= s[i] && s[i] <= 'Z' || '0' <= s[i] && s[i] <= '9') {
		i++
	}
	rest := s[i:]
	return strings.HasPrefix(rest, "=") || strings.HasPrefix(rest, "!=") || strings.HasPrefix(rest, "~=")
}

// anyOf is the pattern matching any of pats: the one, or an alternation.
func anyOf(pats []string) string {
	if len(pats) == 1 {
		return pats[0]
	}
	return "{" + strings.Join(pats, ",") + "}"
}

func sortedSet(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return slices.Compact(s)
}
