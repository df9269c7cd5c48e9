package policytest

import (
	"encoding/json"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mcpwarden/mcpwarden/rules"
)

func TestParseReadsEveryKeyOfACase(t *testing.T) {
	t.Parallel()
	const text = `# a comment
cases:
  - name: reads a file in the project
    tool: mcp:fs:read_text_file
    arguments: {path: ./README.md, head: 10, tail: 1.5, gzip: false, none: null, tags: [a, 2]}
    expect: allow
    rule: "mcp:fs:read_*"
    profile: ci
    principal: alice
    after: [untrusted_input, private]
    roots: /home/you/project
    over_limit: true
  - name: arguments as a JSON object in quotes
    tool: mcp:fs:resources/read
    arguments: '{"uri": "file:///srv/app/.env"}'
    expect: deny
  - name: one label without a list
    tool: mcp:mail:send_mail
    after: untrusted_input
    expect: ask
`
	f, err := Parse("cases.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	want := []Case{
		{Name: "reads a file in the project", Line: 3, Tool: "mcp:fs:read_text_file",
			Arguments: map[string]any{"path": "./README.md", "head": json.Number("10"), "tail": json.Number("1.5"), "gzip": false, "none": nil, "tags": []any{"a", json.Number("2")}},
			Expect:    rules.Allow, Rule: "mcp:fs:read_*", Profile: "ci", Principal: "alice", After: []string{"untrusted_input", "private"}, Roots: []string{"/home/you/project"}, OverLimit: true},
		{Name: "arguments as a JSON object in quotes", Line: 13, Tool: "mcp:fs:resources/read",
			Arguments: map[string]any{"uri": "file:///srv/app/.env"}, Expect: rules.Deny},
		{Name: "one label without a list", Line: 17, Tool: "mcp:mail:send_mail",
			Arguments: map[string]any{}, Expect: rules.Ask, After: []string{"untrusted_input"}},
	}
	if diff := gocmp.Diff(want, f.Cases, cmpopts.IgnoreUnexported(Case{})); diff != "" {
		t.Errorf("cases differ (-want +got):\n%s", diff)
	}
}

func TestParseKeepsTextThatLooksLikeADateOrANumberInQuotes(t *testing.T) {
	t.Parallel()
	const text = "cases:\n  - {name: n, tool: mcp:a:b, expect: ask, arguments: {day: 2026-12-06, version: \"1.10\", octal: 0o17}}\n"
	f, err := Parse("c.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"day": "2026-12-06", "version": "1.10", "octal": json.Number("15")}
	if diff := gocmp.Diff(want, f.Cases[0].Arguments); diff != "" {
		t.Errorf("arguments differ (-want +got):\n%s", diff)
	}
}

// TestParseSaysWhereAndWhatToWrite holds every error about a case file
// to its place (file:line:col) and to saying what to write instead.
func TestParseSaysWhereAndWhatToWrite(t *testing.T) {
	t.Parallel()
	const ok = "    tool: mcp:fs:read_file\n    expect: allow\n"
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"a misspelt key names the key meant", "cases:\n  - name: a\n    expct: allow\n    tool: mcp:fs:x\n",
			[]string{"c.yaml:3:5: cases[0] (a).expct: unknown key; did you mean cases[0] (a).expect?"}},
		{"a misspelt top-level key names cases", "case:\n  - name: a\n",
			[]string{"c.yaml:1:1: case: unknown key; did you mean cases?"}},
		{"an unknown key far from any names the keys", "cases:\n  - name: a\n" + ok + "    colour: red\n",
			[]string{"c.yaml:5:5", "colour: unknown key; the keys here are after, arguments, expect, name, over_limit, principal, profile, roots, rule, tool"}},
		{"a misspelt decision names the one meant", "cases:\n  - name: a\n    tool: mcp:fs:x\n    expect: alow\n",
			[]string{"c.yaml:4:13: cases[0] (a).expect: unknown decision \"alow\": want deny, ask or allow; did you mean allow?"}},
		{"a decision in capitals is refused", "cases:\n  - name: a\n    tool: mcp:fs:x\n    expect: Allow\n",
			[]string{"c.yaml:4:13", `unknown decision "Allow"`}},
		{"a case without name, tool or expect says what every case has", "cases:\n  - arguments: {}\n",
			[]string{"c.yaml:2:5: cases[0]: expect is required", "name is required", "tool is required"}},
		{"a case that is not a section", "cases:\n  - mcp:fs:read_file\n",
			[]string{"c.yaml:2:5: cases[0]: want a case: a section with name, tool and expect, got \"mcp:fs:read_file\""}},
		{"cases that are not a list", "cases: {name: a}\n",
			[]string{"c.yaml:1:8: cases: want a list of cases"}},
		{"an empty list", "cases: []\n", []string{"c.yaml:1:8: cases: the list is empty"}},
		{"an empty file", "", []string{"c.yaml: no cases: write cases:"}},
		{"a file of comments only", "# nothing yet\n", []string{"c.yaml: no cases"}},
		{"a file that is a list", "- name: a\n", []string{"c.yaml:1:1: want a section holding cases:, got a list"}},
		{"invalid YAML names the line", "cases:\n  - name: a\n    tool: [\n", []string{"c.yaml:3: invalid YAML: did not find expected node content"}},
		{"a name that is a list", "cases:\n  - name: [a]\n" + ok, []string{"c.yaml:2:11: cases[0].name: want text, got a list"}},
		{"an empty name", "cases:\n  - name: \"\"\n" + ok, []string{"c.yaml:2:11: cases[0].name: want a name"}},
		{"a null tool", "cases:\n  - name: a\n    tool:\n    expect: ask\n", []string{"c.yaml:3:10", "cases[0] (a).tool: want text, got nothing"}},
		{"over_limit as text", "cases:\n  - name: a\n" + ok + "    over_limit: \"yes\"\n", []string{"c.yaml:5:17: cases[0] (a).over_limit: want true or false, got \"yes\""}},
		{"after as a section", "cases:\n  - name: a\n" + ok + "    after: {a: b}\n", []string{"c.yaml:5:12", "want a label or a list of labels"}},
		{"a relative root", "cases:\n  - name: a\n" + ok + "    roots: [project]\n", []string{"c.yaml:5:12", `"project" is not absolute`}},
		{"arguments as a list", "cases:\n  - name: a\n" + ok + "    arguments: [a]\n", []string{"c.yaml:5:16", "want a section of names and values"}},
		{"arguments in JSON that is not an object", "cases:\n  - name: a\n" + ok + "    arguments: '[1]'\n", []string{"c.yaml:5:16", "cases[0] (a).arguments"}},
		{"arguments with a key that is a list", "cases:\n  - name: a\n" + ok + "    arguments: {[a]: b}\n", []string{"c.yaml:5:16", "want a name as the key"}},
		{"an argument that is no JSON number", "cases:\n  - name: a\n" + ok + "    arguments: {n: .inf}\n", []string{"c.yaml:5:16", ".inf is no JSON number; quote it"}},
		{"two cases of one name", "cases:\n  - name: a\n" + ok + "  - name: a\n" + ok,
			[]string{"c.yaml:5:11: cases[1].name: \"a\" names the case on line 2 too"}},
		{"every problem is reported, not the first", "cases:\n  - name: a\n    tool: mcp:fs:x\n    expect: alow\n  - name: b\n    toll: mcp:fs:x\n    expect: deny\n",
			[]string{"c.yaml:4:13", "c.yaml:6:5", "did you mean cases[1] (b).tool?"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, err := Parse("c.yaml", []byte(tc.text))
			if err == nil {
				t.Fatalf("Parse = %d cases, want an error", len(f.Cases))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestAWrittenTwiceExpectIsRefusedNotReplaced: YAML lets a key be written
// twice in a section, the last one winning; a case whose second expect
// replaced its first would test something else than it says.
func TestAWrittenTwiceExpectIsRefusedNotReplaced(t *testing.T) {
	t.Parallel()
	for _, text := range []string{
		"cases:\n  - name: a\n    tool: mcp:fs:x\n    expect: deny\n    expect: allow\n",
		"cases:\n  - name: a\n    tool: mcp:fs:x\n    expect: deny\ncases:\n  - name: b\n    tool: mcp:fs:x\n    expect: allow\n",
	} {
		if _, err := Parse("c.yaml", []byte(text)); err == nil || !strings.Contains(err.Error(), "written twice") {
			t.Errorf("Parse(%q) = %v, want an error saying a key is written twice", text, err)
		}
	}
}

// TestCaseArgumentsAreHeldToTheProxysStrictness: a case's arguments are
// what the proxy would make of them, so a case cannot pass with
// arguments the proxy refuses (keys a server folds together, a NUL).
func TestCaseArgumentsAreHeldToTheProxysStrictness(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, args, want string }{
		{"two keys a server reads as one", "{path: a, PATH: b}", "PATH"},
		{"a NUL in a value", `{path: "a\0b"}`, "NUL"},
		{"a duplicate key in quoted JSON", `'{"path": "a", "path": "b"}'`, "path"},
		{"a key written twice in the section", "{path: a, path: /etc/passwd}", `"path" is written twice`},
		{"a key written twice deeper in", "{options: {mode: a, mode: b}}", `"mode" is written twice`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			text := "cases:\n  - name: a\n    tool: mcp:fs:x\n    expect: deny\n    arguments: " + tc.args + "\n"
			_, err := Parse("c.yaml", []byte(text))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "c.yaml:5:16") {
				t.Errorf("Parse = %v, want an error at c.yaml:5:16 about %s", err, tc.want)
			}
		})
	}
}

// TestAliasBombInArgumentsIsRefused: a few lines of anchors, each an
// alias list of the one before, expand to billions of values; the parser
// must refuse them rather than expand them.
func TestAliasBombInArgumentsIsRefused(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	text := "cases:\n  - name: a\n    tool: mcp:fs:x\n    expect: deny\n    arguments:\n      " + strings.ReplaceAll(strings.TrimSpace(b.String()), "\n", "\n      ") + "\n"
	_, err := Parse("c.yaml", []byte(text))
	if err == nil || !strings.Contains(err.Error(), "anchors and aliases") {
		t.Errorf("Parse = %v, want the arguments refused as too many values", err)
	}
}

// TestCasesInASecondYAMLDocumentAreNotIgnored: yaml reads the first
// document of a text; cases after a "---" would never run, and the file
// would pass.
func TestCasesInASecondYAMLDocumentAreNotIgnored(t *testing.T) {
	t.Parallel()
	const one = "cases:\n  - {name: a, tool: mcp:fs:x, expect: deny}\n"
	for _, text := range []string{one + "---\n" + one, one + "---\n", "---\n" + one + "...\n---\n" + one} {
		if f, err := Parse("c.yaml", []byte(text)); err == nil || !strings.Contains(err.Error(), "write every case in one YAML document") {
			t.Errorf("Parse(%q) = %v, %v; want an error: every case in one document", text, f, err)
		}
	}
	if _, err := Parse("c.yaml", []byte("---\n"+one)); err != nil {
		t.Errorf("one document after ---: %v", err)
	}
}
