package rules

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseRule(t *testing.T) {
	t.Parallel()
	type cond struct{ Key, Op, Pattern string }
	tests := []struct {
		name         string
		rule         string
		server, tool string
		conds        []cond
	}{
		{name: "a rule without conditions", rule: "mcp:fs:read_file", server: "fs", tool: "read_file"},
		{name: "globs in server and tool", rule: "mcp:*:read_*", server: "*", tool: "read_*"},
		{name: "one condition", rule: "mcp:fs:write_file:path=/etc/**", server: "fs", tool: "write_file",
			conds: []cond{{"path", "=", "/etc/**"}}},
		{name: "a colon in a URL pattern does not split", rule: "mcp:web:fetch:url=https://*", server: "web", tool: "fetch",
			conds: []cond{{"url", "=", "https://*"}}},
		{name: "a colon and port in a pattern", rule: "mcp:web:fetch:url=http://h:8080/*:method=GET", server: "web", tool: "fetch",
			conds: []cond{{"url", "=", "http://h:8080/*"}, {"method", "=", "GET"}}},
		{name: "the three operators", rule: "mcp:sh:run:cmd~=ls.*:cwd!=/etc/**:shell=bash", server: "sh", tool: "run",
			conds: []cond{{"cmd", "~=", "ls.*"}, {"cwd", "!=", "/etc/**"}, {"shell", "=", "bash"}}},
		{name: "a dotted key and an array key", rule: "mcp:fs:*:options.paths[]=/srv/**", server: "fs", tool: "*",
			conds: []cond{{"options.paths[]", "=", "/srv/**"}}},
		{name: "an equals sign inside a pattern", rule: "mcp:sh:run:cmd=a=b", server: "sh", tool: "run",
			conds: []cond{{"cmd", "=", "a=b"}}},
		{name: "an empty pattern", rule: "mcp:sh:run:cmd=", server: "sh", tool: "run",
			conds: []cond{{"cmd", "=", ""}}},
		{name: "an escaped colon does not split", rule: `mcp:sh:run:cmd=a\:b=c`, server: "sh", tool: "run",
			conds: []cond{{"cmd", "=", `a\:b=c`}}},
		{name: "an escaped colon in a tool", rule: `mcp:x:ns\:tool`, server: "x", tool: `ns\:tool`},
		{name: "a colon not followed by a key stays in the pattern", rule: "mcp:sh:run:cmd=echo :x", server: "sh", tool: "run",
			conds: []cond{{"cmd", "=", "echo :x"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := parseRule(tt.rule)
			if err != nil {
				t.Fatalf("parseRule(%q): %s at %d", tt.rule, err.msg, err.off)
			}
			var got []cond
			for _, c := range r.conds {
				got = append(got, cond{c.key.text, c.op.String(), c.pat.text})
			}
			if r.server.text != tt.server || r.tool.text != tt.tool {
				t.Errorf("server, tool = %q, %q, want %q, %q", r.server.text, r.tool.text, tt.server, tt.tool)
			}
			if diff := cmp.Diff(tt.conds, got); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompileRuleErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		rule    string
		wantCol int
		wantMsg string
	}{
		{name: "a rule without the mcp prefix", rule: "fs:read_file", wantCol: 1, wantMsg: `starts with "mcp:"`},
		{name: "a rule without a tool", rule: "mcp:fs", wantCol: 7, wantMsg: `missing ":<tool>"`},
		{name: "an empty server", rule: "mcp::x", wantCol: 5, wantMsg: "empty server"},
		{name: "an empty tool", rule: "mcp:fs:", wantCol: 8, wantMsg: "empty tool"},
		{name: "an upper-case server", rule: "mcp:FS:x", wantCol: 5, wantMsg: "not a server name"},
		{name: "a condition without an operator", rule: "mcp:fs:write_file:path/etc", wantCol: 18, wantMsg: `must start a condition`},
		{name: "a condition with an unknown operator", rule: "mcp:fs:x:n>=5", wantCol: 9, wantMsg: `must start a condition`},
		{name: "white space in a tool", rule: "mcp:fs:read file", wantCol: 12, wantMsg: "white space"},
		{name: "an unclosed class in a pattern", rule: "mcp:fs:x:path=/etc/[", wantCol: 21, wantMsg: "invalid glob"},
		{name: "an unclosed brace in a tool", rule: "mcp:fs:{a,b", wantCol: 12, wantMsg: "invalid glob"},
		{name: "an invalid regexp", rule: "mcp:sh:run:cmd~=(", wantCol: 17, wantMsg: "invalid regexp"},
		{name: "a column counted in characters", rule: "mcp:fs:x:name=é:path=/[", wantCol: 24, wantMsg: "invalid glob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Compile(Spec{Servers: map[string]ServerSpec{"fs": {Policy: PolicySpec{Ask: []string{"mcp:fs:ok", tt.rule}}}}})
			re, ok := errors.AsType[*RuleError](err)
			if !ok {
				t.Fatalf("Compile(%q) = %v, want a *RuleError", tt.rule, err)
			}
			if re.Where != "servers.fs.policy.ask[1]" || re.Rule != tt.rule || re.Column != tt.wantCol || !strings.Contains(re.Msg, tt.wantMsg) {
				t.Errorf("got %+v, want where servers.fs.policy.ask[1], column %d, message containing %q", *re, tt.wantCol, tt.wantMsg)
			}
			if !strings.Contains(err.Error(), tt.rule) {
				t.Errorf("error %q does not quote the rule", err)
			}
		})
	}
}

func TestCompileJoinsAllErrors(t *testing.T) {
	t.Parallel()
	_, err := Compile(Spec{
		Global:   PolicySpec{Default: "maybe", Deny: []string{"x"}, OutsideWorkspace: "allow", AskFallback: "ask", Workspace: []string{"rel"}},
		Servers:  map[string]ServerSpec{"Bad": {}, "fs": {Root: "rel", Policy: PolicySpec{Allow: []string{"mcp:fs:["}}}},
		Profiles: map[string]PolicySpec{"ci": {Ask: []string{"mcp:*"}}},
		PathKeys: []string{"a.b"},
	})
	if err == nil {
		t.Fatal("Compile accepted a bad spec")
	}
	for _, want := range []string{
		"path_keys[0]", "policy.default", `policy.deny[0]: rule "x": column 1`, "policy.outside_workspace",
		"policy.ask_fallback", "policy.workspace[0]", `servers.Bad: "Bad"`, "servers.fs.root",
		"servers.fs.policy.allow[0]", "profiles.ci.ask[0]",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != 10 {
		t.Errorf("got %d errors, want 10:\n%v", n, err)
	}
}
