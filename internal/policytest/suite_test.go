package policytest

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/mcpwarden/mcpwarden/internal/app"
	"github.com/mcpwarden/mcpwarden/internal/app/apptest"
)

// testConfig is the config the suites here are decided against: a
// filesystem server confined to its project, a mail server, a profile, a
// flow rule and a limit.
const testConfig = `servers:
  fs:
    command: npx
    args: [-y, "@modelcontextprotocol/server-filesystem", "."]
    cwd: project
    policy:
      workspace: [project]
      outside_workspace: deny
  mail:
    url: https://mail.example.com/mcp
profiles:
  ci:
    policy:
      deny: ["mcp:fs:write_*"]
labels:
  untrusted_input: ["mcp:fs:read_*"]
  egress: ["mcp:mail:send_*"]
flow:
  - {after: untrusted_input, then: ask, on: egress}
limits:
  - {match: "mcp:mail:send_*", max: 5, per: session, window: 1h, then: deny}
policy:
  default: deny
  deny: ["mcp:*:*:@path=**/.env"]
  ask: ["mcp:fs:write_file"]
  allow:
    - "mcp:fs:read_*"
    - "mcp:fs:write_file"
    - "mcp:fs:network/connect:host=registry.npmjs.org"
    - "mcp:mail:send_mail:@principal=alice"
audit: {sink: none}
`

// testSetup loads testConfig in a directory of its own, as test does:
// mcpwarden started in the config's directory.
func testSetup(t testing.TB) *app.Setup {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "project"), 0o700); err != nil {
		t.Fatal(err)
	}
	return apptest.Setup(t, dir, testConfig)
}

// suiteOf parses text and prepares it against st, failing the test on an
// error.
func suiteOf(t *testing.T, st *app.Setup, text string) *Suite {
	t.Helper()
	f, err := Parse("cases.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSuite(st, f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSuiteDecidesEveryKindOfCaseAsCheckDoes(t *testing.T) {
	t.Parallel()
	st := testSetup(t)
	const text = `cases:
  - {name: a read in the project is allowed, tool: mcp:fs:read_text_file, arguments: {path: notes.md}, expect: allow, rule: "mcp:fs:read_*"}
  - {name: a read of the sibling folder is denied, tool: mcp:fs:read_text_file, arguments: {path: ../other/notes.md}, expect: deny, rule: outside_workspace}
  - {name: a secret in the project is denied, tool: mcp:fs:read_text_file, arguments: {path: .env}, expect: deny, rule: "mcp:*:*:@path=**/.env"}
  - {name: a write asks, tool: mcp:fs:write_file, arguments: {path: a.md}, expect: ask}
  - {name: a write in the ci profile is denied, tool: mcp:fs:write_file, arguments: {path: a.md}, profile: ci, expect: deny, rule: "mcp:fs:write_*"}
  - {name: a resource read of a secret is denied, tool: mcp:fs:resources/read, arguments: {uri: "file:///x/.env"}, expect: deny}
  - {name: the registry is reachable, tool: mcp:fs:network/connect, arguments: {host: REGISTRY.npmjs.org., port: 443}, expect: allow}
  - {name: another host is not, tool: mcp:fs:network/connect, arguments: {host: evil.example, port: 443}, expect: deny}
  - {name: alice may send mail, tool: mcp:mail:send_mail, principal: alice, expect: allow}
  - {name: bob may not, tool: mcp:mail:send_mail, principal: bob, expect: deny, rule: default}
  - {name: after untrusted input sending asks, tool: mcp:mail:send_mail, principal: alice, after: untrusted_input, expect: ask}
  - {name: beyond the limit sending is denied, tool: mcp:mail:send_mail, principal: alice, over_limit: true, expect: deny}
`
	s := suiteOf(t, st, text)
	for i, c := range s.File().Cases {
		if r := s.Decide(i); !r.Passed() {
			t.Errorf("%s: got %v by %q (%s), want %v by %q", c.Name, r.Verdict.Decision, r.Verdict.Rule, r.Verdict.Reason, c.Expect, c.Rule)
		}
	}
}

// TestCaseAboutWhatTheConfigLacksIsAnErrorNotAFailure: a case naming a
// server, profile or label the config does not have would otherwise be
// decided (an unknown profile is denied everything) and could pass for
// the wrong reason.
func TestCaseAboutWhatTheConfigLacksIsAnErrorNotAFailure(t *testing.T) {
	t.Parallel()
	st := testSetup(t)
	tests := []struct {
		name, extra string
		want        []string
	}{
		{"a misspelt server", "tool: mcp:fz:read_file", []string{"cases.yaml:4:11", `case "c": tool: no server "fz" in the config`, "did you mean mcp:fs:...?"}},
		{"a tool name without its server", "tool: read_file", []string{"cases.yaml:4:11", "want a canonical name mcp:<server>:<tool>"}},
		{"a request kind mcpwarden does not decide", "tool: mcp:fs:tools/list", []string{"cases.yaml:4:11", "nor a request kind mcpwarden decides"}},
		{"a misspelt profile", "tool: mcp:fs:read_file\n    profile: cj", []string{"cases.yaml:5:14", `case "c": profile: "cj": the config has no such profile; profiles: ci`, `did you mean "ci"?`}},
		{"a profile denied everything is no pass", "tool: mcp:fs:read_file\n    profile: nobody", []string{`profile: "nobody": the config has no such profile`}},
		{"a misspelt label", "tool: mcp:fs:read_file\n    after: [untrusted_inputs]", []string{"cases.yaml:5:12", `after: "untrusted_inputs": the config defines no such label`, `did you mean "untrusted_input"?`}},
		{"a connection without a port", "tool: mcp:fs:network/connect\n    arguments: {host: a.example}", []string{"cases.yaml:4:11", "port"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, err := Parse("cases.yaml", []byte("cases:\n  - name: c\n    expect: deny\n    "+tc.extra+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = NewSuite(st, f)
			if err == nil {
				t.Fatal("NewSuite = nil, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestACaseDecidedByAnotherRuleFails: a case that names its rule fails
// when the decision is right for another reason (a secret denied by the
// default after its own deny rule was deleted would pass otherwise).
func TestACaseDecidedByAnotherRuleFails(t *testing.T) {
	t.Parallel()
	s := suiteOf(t, testSetup(t), `cases:
  - name: bob is denied mail by a rule
    tool: mcp:mail:send_mail
    principal: bob
    expect: deny
    rule: "mcp:mail:send_*"
`)
	if r := s.Decide(0); r.Passed() || r.Verdict.Decision != r.Case.Expect {
		t.Errorf("case passed = %v, decided %v by %q; want it failed on the rule alone (deny by default)", r.Passed(), r.Verdict.Decision, r.Verdict.Rule)
	}
}

func TestReportIsGoTestsText(t *testing.T) {
	t.Parallel()
	st := testSetup(t)
	s := suiteOf(t, st, `cases:
  - name: a read is allowed
    tool: mcp:fs:read_text_file
    arguments: {path: notes.md}
    expect: allow
  - name: a write is allowed
    tool: mcp:fs:write_file
    arguments: {path: notes.md}
    profile: ci
    after: [untrusted_input]
    expect: allow
`)
	tests := []struct {
		name   string
		opts   Options
		passed bool
		want   string
	}{
		{"a failing case says what it wanted, got and why", Options{}, false, `--- FAIL: a write is allowed (cases.yaml:6)
    request:    mcp:fs:write_file {"path":"notes.md"}
    profile:    ci
    after:      untrusted_input
    want:       allow
    got:        deny by mcp:fs:write_*
    in:         profiles.ci
    because:    deny rule "mcp:fs:write_*" matched
FAIL	cases.yaml	2 cases, 1 failed
FAIL
`},
		{"-v reports the passing case too", Options{Verbose: true, Run: regexp.MustCompile("read")}, true, `=== RUN   a read is allowed
--- PASS: a read is allowed (cases.yaml:2)
    request:    mcp:fs:read_text_file {"path":"notes.md"}
    got:        allow by mcp:fs:read_*
    in:         policy
    because:    allow rule "mcp:fs:read_*" matched
ok  	cases.yaml	1 case
`},
		{"a -run that selects nothing passes and says so", Options{Run: regexp.MustCompile("^nothing$")}, true, "ok  \tcases.yaml\t0 cases [no cases to run]\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b strings.Builder
			passed, err := Run(&b, []*Suite{s}, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if passed != tc.passed {
				t.Errorf("passed = %v, want %v", passed, tc.passed)
			}
			if diff := gocmp.Diff(tc.want, b.String()); diff != "" {
				t.Errorf("report differs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestJSONReportIsOneEventALine(t *testing.T) {
	t.Parallel()
	s := suiteOf(t, testSetup(t), `cases:
  - {name: a read is allowed, tool: mcp:fs:read_text_file, arguments: {path: a}, expect: allow}
  - {name: a write is allowed, tool: mcp:fs:write_file, arguments: {path: a}, expect: allow}
`)
	var b strings.Builder
	at := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	passed, err := Run(&b, []*Suite{s}, Options{JSON: true, Now: func() time.Time { return at }})
	if err != nil || passed {
		t.Fatalf("Run = %v, %v; want a failure", passed, err)
	}
	var actions []string
	sc := bufio.NewScanner(strings.NewReader(b.String()))
	for sc.Scan() {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if !e.Time.Equal(at) || e.Package != "cases.yaml" {
			t.Errorf("event %s: want Time %v and Package cases.yaml", sc.Text(), at)
		}
		if e.Action != ActionOutput {
			actions = append(actions, string(e.Action)+" "+e.Test+" "+e.Got)
		}
	}
	want := []string{"start  ", "run a read is allowed ", "pass a read is allowed allow", "run a write is allowed ", "fail a write is allowed ask", "fail  "}
	if diff := gocmp.Diff(want, actions); diff != "" {
		t.Errorf("events differ (-want +got):\n%s", diff)
	}
}
