package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

func FuzzParse(f *testing.F) {
	for _, s := range []string{"mcp:fs:read_file", "mcp:*:*:path=**/.env", "mcp:web:fetch:url=https://*:m!=GET"} {
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
	f.Fuzz(func(t *testing.T, rule, extra string, args []byte, server, tool string) {
		p, err := Compile(global(PolicySpec{Deny: []string{rule}}))
		if err != nil {
			return
		}
		c := Call{Server: server, Tool: tool, Arguments: fuzzArgs(args)}
		v := p.Decide(c)
		if e := p.Explain(c); e.Verdict != v {
			t.Fatalf("Explain = %+v, Decide = %+v", e.Verdict, v)
		}
		p.Hidden(c)
		if v.Decision != Deny {
			return
		}
		var extras []string
		if _, err := Compile(global(PolicySpec{Allow: []string{extra}})); err == nil {
			extras = []string{extra}
		}
		all := append([]string{"mcp:*:*", "mcp:" + "*:" + "*:path=**"}, extras...)
		wide := PolicySpec{Default: "allow", Deny: extras, Ask: extras, Allow: all, Workspace: []string{"/"}, WorkspaceFromRoots: true}
		spec := Spec{
			Global:   PolicySpec{Default: "allow", Deny: append(append([]string{}, extras...), rule), Ask: extras, Allow: all},
			Profiles: map[string]PolicySpec{"p": wide},
		}
		if validServerName(server) {
			spec.Servers = map[string]ServerSpec{server: {Policy: wide}}
		}
		q, err := Compile(spec)
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
// length so both decodings are fuzzed; anything else gives nil arguments.
func fuzzArgs(b []byte) map[string]any {
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
