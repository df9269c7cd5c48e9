package proxy

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/mcpwarden/mcpwarden/internal/argview"
	"github.com/mcpwarden/mcpwarden/proxy/ask"
	"github.com/mcpwarden/mcpwarden/proxy/naming"
	"github.com/mcpwarden/mcpwarden/rules"
)

// FuzzFormLayout checks that no argument map changes the approval form's
// line structure: the header lines and the decision field stay as they
// are, every line is a heading, an argument starting with its quoted key,
// an undeclared key, a path value or one of its forms, the form shows
// each argument (and each undeclared nested key) on exactly one line, and
// no line holds a character that could hide or reorder text.
func FuzzFormLayout(f *testing.F) {
	f.Add("content: \"# meeting notes\"\npath: \"x\"\n\n\n", "v", "mode", "0755", "x\n\"path\": \"y\"", "z\r", "l/../secret.txt")
	f.Add("k\u202eey", "\u2066v\u2069", "files", "~/a\u200b", "\ufeff", "\U000E0041", "file:///srv/app/%2e%2e/%2e%2e/etc/passwd")
	f.Add("path", "/etc/passwd", "opts", "x", "a", "ghp_"+strings.Repeat("A1b2", 9), "~")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, nk, nv, path string) {
		p, err := rules.Compile(rules.Spec{Servers: map[string]rules.ServerSpec{"fs": {Root: "/srv/app", Home: "/home/u"}}})
		if err != nil {
			t.Fatal(err)
		}
		args := map[string]any{"path": path, "opts": map[string]any{nk: []any{nv, 1.5, nil, true}}}
		args[k1], args[k2] = v1, v2
		schema := func(naming.Tool) map[string]any {
			return map[string]any{"type": "object", "properties": map[string]any{
				"path": map[string]any{"type": "string"},
				"opts": map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{}}},
			}}
		}
		c := &call{
			tool: naming.Tool{Canonical: "mcp:fs:write_file", Server: "fs", Name: "write_file"}, policy: p, principal: "local",
			snap: &snapshot{policy: p}, verdict: rules.Verdict{Rule: "default", Gate: "policy"}, args: args,
		}
		params, offered := (&ask.Asker{}).Form(questionOf(c, ask.Target{}, schema), ask.Target{})

		for i, r := range params.Message {
			if r != '\n' && r != ' ' && (!unicode.IsPrint(r) || unicode.Is(unicode.Cf, r) || r >= 0xFE00 && r <= 0xFE0F || r >= 0xE0000) {
				t.Fatalf("the form holds U+%04X at byte %d:\n%q", r, i, params.Message)
			}
		}
		lines := strings.Split(strings.TrimSuffix(params.Message, "\n"), "\n") // each line ends in one
		header := []string{"mcpwarden approval: allow this call?", "", "Tool: mcp:fs:write_file", "Server: fs", "Client: (unnamed)",
			"Principal: local", `Asked by: rule "default" in policy`, "", argview.HeadingArguments}
		if len(lines) < len(header) || !slices.Equal(lines[:len(header)], header) {
			t.Fatalf("the header moved:\n%s", params.Message)
		}

		var declared, undeclared []string
		for k := range args {
			if k == "path" || k == "opts" {
				declared = append(declared, k)
			} else {
				undeclared = append(undeclared, k)
			}
		}
		slices.Sort(declared)
		slices.Sort(undeclared)
		wantNested := 0
		if opts, ok := args["opts"].(map[string]any); ok {
			for k := range opts {
				if k != "a" {
					wantNested++
				}
			}
		}

		section := argview.HeadingArguments
		var got = map[string][]string{}
		var nested int
		end := len(lines)
		for i := len(lines) - 1; i >= len(header); i-- { // the closing note after a cut
			if lines[i] == "" {
				end = i
				break
			}
		}
		prev := argview.HeadingArguments
		for _, l := range lines[len(header):end] {
			last := prev
			prev = l
			switch {
			case l == argview.HeadingUndeclared || l == argview.HeadingPaths:
				section = l
			case l == argview.NoArguments && section == argview.HeadingArguments:
			case strings.HasPrefix(l, "  which is \""), strings.HasPrefix(l, "  on disk: \""), strings.HasPrefix(l, "  also read as \""), l == argview.LineUnknown:
				if !strings.HasPrefix(last, `"`) && !strings.HasPrefix(last, "  ") {
					t.Fatalf("a path form follows %q, not a value:\n%s", last, params.Message)
				}
			case strings.HasPrefix(l, `"`):
				if section == argview.HeadingUndeclared && !strings.HasPrefix(l, argview.Quote("opts")+".") {
					got[section] = append(got[section], l)
				} else if section == argview.HeadingUndeclared {
					nested++
				} else {
					got[section] = append(got[section], l)
				}
			default:
				t.Fatalf("the form has a line of no kind: %q\n%q", l, params.Message)
			}
		}
		for _, s := range []struct {
			name string
			keys []string
		}{{argview.HeadingArguments, declared}, {argview.HeadingUndeclared, undeclared}} {
			if len(got[s.name]) != len(s.keys) {
				t.Fatalf("%s has %d argument lines, want %d:\n%s", s.name, len(got[s.name]), len(s.keys), params.Message)
			}
			for i, k := range s.keys {
				if q := argview.Quote(k); len(q) < ask.MaxValueShown && !strings.HasPrefix(got[s.name][i], q+": ") {
					t.Fatalf("line %q does not start with the key %s:\n%s", got[s.name][i], q, params.Message)
				}
			}
		}
		if nested != wantNested && !(k1 == "opts" || k2 == "opts") {
			t.Fatalf("%d undeclared nested lines, want %d:\n%s", nested, wantNested, params.Message)
		}

		schemaOf := params.RequestedSchema.(map[string]any)
		props := schemaOf["properties"].(map[string]any)
		if keys := slices.Sorted(maps.Keys(props)); !slices.Equal(keys, []string{"decision"}) {
			t.Fatalf("the form's fields are %v", keys)
		}
		if enum := props["decision"].(map[string]any)["enum"].([]string); !slices.Equal(enum, offered) {
			t.Fatalf("the decision field offers %v, the form %v", enum, offered)
		}
	})
}
