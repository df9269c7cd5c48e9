package policytest

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/jsonargs"
)

// errPlace matches the place an error line gives: c.yaml, c.yaml:3 or
// c.yaml:3:5.
var errPlace = regexp.MustCompile(`^c\.yaml(?::(\d+)(?::(\d+))?)?: `)

// FuzzParseSaysWhereOrReadsWhole: on any text, Parse either returns cases
// that are whole (a name each, no two alike, a tool, a decision, arguments
// the proxy would parse) or errors that each name the file and a place
// inside the text; it never panics and never takes long. Whole cases are
// then decided against testConfig, or refused each at its place.
func FuzzParseSaysWhereOrReadsWhole(f *testing.F) {
	f.Add([]byte("cases:\n  - name: a\n    tool: mcp:fs:read_file\n    arguments: {path: ./a, n: [1, 2.5, true, null]}\n    expect: allow\n    rule: \"mcp:fs:read_*\"\n    after: [x]\n    over_limit: true\n"))
	f.Add([]byte("cases:\n  - {name: a, tool: mcp:a:b, expect: deny, arguments: '{\"a\": 1}'}\n  - {name: a, tool: mcp:a:b, expect: ask}\n"))
	f.Add([]byte("cases:\n  - name: a\n    expct: allow\n    arguments: &x {a: *x}\n"))
	f.Add([]byte("cases:\n  - name: a\n    tool: mcp:a:b\n    expect: deny\n    arguments: {<<: {a: 1}, ? [k]: v, t: 2001-12-14, f: .nan}\n"))
	f.Add([]byte("x: &a [*a, *a]\ncases: *a\n"))
	f.Add([]byte("cases:\n  - {name: c, tool: mcp:fs:network/connect, arguments: {host: \"[::1]\", port: 0x50}, expect: deny, profile: ci, after: [untrusted_input], over_limit: true}\n"))
	f.Add([]byte("cases:\n  - {name: c, tool: mcp:mail:send_mail, principal: alice, expect: allow, roots: [/tmp]}\n  - {name: d, tool: mcp:fs:resources/read, arguments: {uri: \"file:///x/../.env\"}, expect: deny}\n"))
	f.Add([]byte("cases:\n  - name: \"a\\nb\"\n    \"ex\\npect\": deny\n    tool: mcp:a:b\n"))
	st := testSetup(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("c.yaml", data)
		// YAML breaks lines at CR and at NEL, LS and PS too.
		lines := 1
		for _, br := range []string{"\n", "\r", "\u0085", "\u2028", "\u2029"} {
			lines += bytes.Count(data, []byte(br))
		}
		if err != nil {
			for _, l := range strings.Split(err.Error(), "\n") {
				m := errPlace.FindStringSubmatch(l)
				if m == nil {
					t.Fatalf("error line %q does not start with the file and a place", l)
				}
				if n, _ := strconv.Atoi(m[1]); n > lines {
					t.Errorf("error line %q is past the text's %d lines", l, lines)
				}
			}
			return
		}
		names := map[string]bool{}
		for _, c := range file.Cases {
			if c.Name == "" || c.Tool == "" || names[c.Name] || c.Line < 1 || c.Line > lines || c.Arguments == nil {
				t.Fatalf("case %+v is not whole (or its name is taken)", c)
			}
			names[c.Name] = true
			if _, err := c.Expect.MarshalText(); err != nil {
				t.Fatalf("case %q: %v", c.Name, err)
			}
			raw, err := json.Marshal(c.Arguments)
			if err != nil {
				t.Fatalf("case %q: arguments %v: %v", c.Name, c.Arguments, err)
			}
			if _, _, err := jsonargs.Parse(raw); err != nil {
				t.Fatalf("case %q: arguments %s are refused by the proxy's parser: %v", c.Name, raw, err)
			}
		}
		// Whole cases are decided, or refused at their place.
		s, err := NewSuite(st, file)
		if err != nil {
			for _, l := range strings.Split(err.Error(), "\n") {
				if m := errPlace.FindStringSubmatch(l); m == nil || m[2] == "" {
					t.Fatalf("error line %q does not start with the file, a line and a column", l)
				}
			}
			return
		}
		for i := range file.Cases {
			r := s.Decide(i)
			if _, err := r.Verdict.Decision.MarshalText(); err != nil || r.Verdict.Rule == "" && r.Verdict.Gate == "" {
				t.Fatalf("case %q decided %+v: want a decision that names what made it", r.Case.Name, r.Verdict)
			}
		}
	})
}
