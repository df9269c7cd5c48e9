package proxy

import (
	"os"
	"path/filepath"
	"slices"

	"github.com/mcpwarden/mcpwarden/proxy/ask"
	"github.com/mcpwarden/mcpwarden/proxy/connect"
	"github.com/mcpwarden/mcpwarden/proxy/ondisk"
	"github.com/mcpwarden/mcpwarden/rules"
)

// target is c as grants see it (see ask.Target): whether it has path-like
// keys, whether it may earn a session grant, and every form of each path;
// for a connection, its endpoint.
func (s *Server) target(c *call) ask.Target {
	if c.method == methodConnect {
		e := connect.Endpoint(c.args)
		return ask.Target{Earns: e != "", Endpoint: e}
	}
	t := ask.Target{Pathless: true, Earns: true}
	eachPathValue(c.policy, c.args, func(_ string, v any) {
		t.Pathless = false
		if !stringsOnly(v) {
			t.Earns = false // `[]`, 5, {}: nothing a grant could be scoped to
		}
	})
	if t.Pathless {
		return t
	}
	paths, forms, known := s.pathForms(c)
	if !known || len(paths) == 0 {
		t.Earns = false
	}
	t.Paths, t.Forms = paths, forms
	local := c.snap.servers[c.tool.Server].ResolveSymlinks
	for _, p := range paths {
		dir := filepath.Dir(p)
		if info, err := os.Stat(p); local && err == nil && info.IsDir() {
			dir = p
		}
		if !slices.Contains(t.Folders, dir) {
			t.Folders = append(t.Folders, dir)
		}
	}
	return t
}

// pathForms returns every form of every path-like value of c: paths, the
// lexical forms (absolute and clean, relative ones joined to the server's
// root), and forms, every form the rules decide on (lexical, NFC, `file:`
// and `~` readings and, for a server on this machine, each as it resolves
// on disk). known is false when any value's location cannot be known.
func (s *Server) pathForms(c *call) (paths, forms []string, known bool) {
	rc := c.rulesCall()
	if c.snap.servers[c.tool.Server].ResolveSymlinks {
		rc.Physical = ondisk.PhysicalFormsIn(c.policy, rc, s.serverPID(c.tool.Server))
	}
	values, known := c.policy.PathForms(rc)
	for _, v := range values {
		for _, raw := range v.Raw {
			paths = append(paths, filepath.Clean(raw))
		}
		forms = append(forms, v.Forms...)
	}
	slices.Sort(paths)
	slices.Sort(forms)
	return slices.Compact(paths), slices.Compact(forms), known
}

// eachPathValue calls fn with the key and value of every path-like key
// anywhere in v (nested objects and arrays included), as the rules find
// them.
func eachPathValue(p *rules.Policy, v any, fn func(key string, v any)) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if p.IsPathKey(k) {
				fn(k, e)
			}
			eachPathValue(p, e, fn)
		}
	case []any:
		for _, e := range t {
			eachPathValue(p, e, fn)
		}
	}
}

// stringsOnly reports whether v is a string, or a non-empty array whose
// elements are all such values.
func stringsOnly(v any) bool {
	switch t := v.(type) {
	case string:
		return true
	case []any:
		if len(t) == 0 {
			return false
		}
		for _, e := range t {
			if !stringsOnly(e) {
				return false
			}
		}
		return true
	}
	return false
}

// pathStringsOf calls fn with the strings of a path-like value: a string,
// or the strings of an array of them, at any depth.
func pathStringsOf(v any, fn func(string)) {
	switch t := v.(type) {
	case string:
		fn(t)
	case []any:
		for _, e := range t {
			pathStringsOf(e, fn)
		}
	}
}
