package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/mcpwarden/mcpwarden/internal/jsonargs"
)

func FuzzParse(f *testing.F) {
	for _, s := range []string{"mcp:fs:read_file", "mcp:*:*:path=**/.env", "mcp:web:fetch:url=https://*:m!=GET",
		"mcp:*:*:@path=**/.env", "mcp:*:*:@readOnly=true", "mcp:web:*:url.host=169.254.169.254", "mcp:sh:*:cmd=ls*",
		"mcp:fs:*:path==/root/**", "mcp:fs:*:path={/a,b}", "mcp:*:*:@nope=x", "mcp:*:*:@path.x=/a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, serr := parseRule(s)
		if serr != nil {
			if serr.off < 0 || serr.off > len(s) || serr.msg == "" {
				t.Fatalf("parseRule(%q) error at %d: %q", s, serr.off, serr.msg)
			}
		} else {
			if r.server.text == "" || r.tool.text == "" {
				t.Fatalf("parseRule(%q) has an empty server or tool: %+v", s, r)
			}
			for _, c := range r.conds {
				if c.key.off < 0 || c.pat.off > len(s) || len(c.segs) == 0 {
					t.Fatalf("parseRule(%q) has a bad condition: %+v", s, c)
				}
			}
		}
		_, err := Compile(global(PolicySpec{Deny: []string{s}}))
		if (serr != nil) && err == nil {
			t.Fatalf("Compile(%q) accepted what parseRule rejected", s)
		}
		if err != nil {
			re, ok := errors.AsType[*RuleError](err)
			if !ok {
				t.Fatalf("Compile(%q) = %v, want a *RuleError", s, err)
			}
			if re.Column < 1 || re.Column > utf8.RuneCountInString(s)+1 {
				t.Fatalf("Compile(%q) column %d out of range", s, re.Column)
			}
		}
	})
}

// FuzzDecide checks that deciding never panics, that Explain agrees with
// Decide, and that a deny rule that matches a call keeps denying it whatever
// other rules, gates and defaults are added.
func FuzzDecide(f *testing.F) {
	f.Add("mcp:fs:*:path=/etc/**", "mcp:fs:*", []byte(`{"path":"/etc/passwd"}`), "fs", "read_file")
	f.Add("mcp:*:*:@path=**/.env", "mcp:fs:*:@path=/srv/**", []byte(`{"paths":["a","file:///srv/.ENV","~/x"],"uri":"file:///x/.env"}`), "fs", "read_multiple_files")
	f.Add("mcp:web:*:url.host=169.254.169.254", "mcp:web:*:url=https://*", []byte(`{"url":"https://user@[::ffff:a9fe:a9fe]/"}`), "web", "fetch")
	f.Add("mcp:sh:*:cmd!=ls*", "mcp:sh:*:cmd=ls*", []byte(`{"CMD":"ls; id","limit":-0}`), "sh", "run")
	f.Add("mcp:fs:*:path=/srv/caf\u00e9/**", "mcp:*:*:@readOnly=true", []byte(`{"path":"/srv/cafe\u0301/x","source":[]}`), "fs", "move")
	f.Fuzz(func(t *testing.T, rule, extra string, args []byte, server, tool string) {
		spec := global(PolicySpec{Deny: []string{rule}})
		if ValidServerName(server) {
			spec.Servers = map[string]ServerSpec{server: {Root: "/srv/app", Home: "/home/u"}}
		}
		spec.PathsCaseInsensitive = len(args)%3 == 0
		p, err := Compile(spec)
		if err != nil {
			return
		}
		c := Call{Server: server, Tool: tool, Arguments: fuzzArgs(args), Principal: extra, Facts: Facts{ReadOnly: Hint(len(rule) % 3)}}
		v := p.Decide(c)
		if e := p.Explain(c); e.Verdict != v {
			t.Fatalf("Explain = %+v, Decide = %+v", e.Verdict, v)
		}
		p.Hidden(c)
		forms, _ := p.PathForms(c)
		// More forms can only make the decision more restrictive: with every
		// raw reading's physical form set to something else, a deny stays.
		phys := map[string]string{}
		for _, f := range forms {
			for _, raw := range f.Raw {
				phys[raw] = "/elsewhere" + raw
			}
		}
		cp := c
		cp.Physical = phys
		if got := p.Decide(cp); got.Decision > v.Decision {
			t.Fatalf("with physical forms %v the call is %+v, without %+v", phys, got, v)
		}
		// More roots, configured or handed to the server, can only make the
		// decision more restrictive: a relative value gains readings, never
		// loses one.
		one := Spec{Global: PolicySpec{Deny: []string{rule}, Allow: []string{extra}}, PathsCaseInsensitive: spec.PathsCaseInsensitive}
		one.Servers = map[string]ServerSpec{server: {Root: "/srv/app", Home: "/home/u"}}
		if a, err := Compile(one); err == nil {
			one.Servers = map[string]ServerSpec{server: {Root: "/srv/app", Home: "/home/u", ExtraRoots: []string{"/srv/data", "/"}}}
			b, err := Compile(one)
			if err != nil {
				t.Fatalf("Compile with further roots: %v", err)
			}
			if without, with := a.Decide(c), b.Decide(c); with.Decision > without.Decision {
				t.Fatalf("with further roots the call is %+v, without %+v", with, without)
			}
			handed := c
			handed.UpstreamRoots = []string{"/srv/handed", "relative"}
			if without, with := a.Decide(c), a.Decide(handed); with.Decision > without.Decision {
				t.Fatalf("with MCP roots handed to the server the call is %+v, without %+v", with, without)
			}
		}
		if v.Decision != Deny {
			return
		}
		var extras []string
		if _, err := Compile(global(PolicySpec{Allow: []string{extra}})); err == nil {
			extras = []string{extra}
		}
		all := append([]string{"mcp:*:*", "mcp:" + "*:" + "*:path=**"}, extras...)
		wide := PolicySpec{Default: "allow", Deny: extras, Ask: extras, Allow: all, Workspace: []string{"/"}, WorkspaceFromRoots: true}
		wideSpec := Spec{
			Global:               PolicySpec{Default: "allow", Deny: append(append([]string{}, extras...), rule), Ask: extras, Allow: all},
			Profiles:             map[string]PolicySpec{"p": wide},
			PathsCaseInsensitive: spec.PathsCaseInsensitive,
		}
		if ValidServerName(server) {
			wideSpec.Servers = map[string]ServerSpec{server: {Policy: wide, Root: "/srv/app", Home: "/home/u"}}
		}
		q, err := Compile(wideSpec)
		if err != nil {
			t.Fatalf("Compile of the widened spec: %v", err)
		}
		for _, profile := range []string{"", "p"} {
			c.Profile = profile
			if got := q.Decide(c); got.Decision != Deny {
				t.Fatalf("rule %q denied %+v alone but with more rules the call is %+v", rule, c, got)
			}
		}
	})
}

// fuzzArgs decodes a JSON object, with UseNumber when the input is of even
// length so both decodings are fuzzed; anything else, and anything the proxy
// refuses before deciding (jsonargs: folded keys, NUL …), gives nil
// arguments.
func fuzzArgs(b []byte) map[string]any {
	if _, _, err := jsonargs.Parse(b); err != nil {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	if len(b)%2 == 0 {
		d.UseNumber()
	}
	var m map[string]any
	if d.Decode(&m) != nil {
		return nil
	}
	return m
}
