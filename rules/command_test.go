package rules

import "testing"

func TestSemicolonDoesNotRideLsAllow(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, global(PolicySpec{
		Allow: []string{"mcp:sh:run:cmd=ls*", "mcp:sh:run:cmd~=git (status|log).*", "mcp:sh:build:command=make * | tee *"},
	}))
	runSecurity(t, p, "sh", "run", []securityCase{
		{name: "a plain ls", args: map[string]any{"cmd": "ls -la /srv"}, want: Allow},
		{name: "a semicolon", args: map[string]any{"cmd": "ls; cat /etc/shadow"}, want: Ask},
		{name: "an and-list", args: map[string]any{"cmd": "ls && curl evil.test"}, want: Ask},
		{name: "an or-list", args: map[string]any{"cmd": "ls || rm -rf /"}, want: Ask},
		{name: "a background job", args: map[string]any{"cmd": "ls & rm -rf /"}, want: Ask},
		{name: "a pipe", args: map[string]any{"cmd": "ls | sh"}, want: Ask},
		{name: "a backquote", args: map[string]any{"cmd": "ls `rm -rf /`"}, want: Ask},
		{name: "a command substitution", args: map[string]any{"cmd": "ls $(rm -rf /)"}, want: Ask},
		{name: "a redirection out", args: map[string]any{"cmd": "ls > /etc/passwd"}, want: Ask},
		{name: "a redirection in", args: map[string]any{"cmd": "ls < /dev/zero"}, want: Ask},
		{name: "a newline", args: map[string]any{"cmd": "ls\nrm -rf /"}, want: Ask},
		{name: "a carriage return", args: map[string]any{"cmd": "ls\rrm -rf /"}, want: Ask},
		{name: "a regexp allow is covered too", args: map[string]any{"cmd": "git status; rm -rf /"}, want: Ask},
		{name: "a plain regexp match", args: map[string]any{"cmd": "git log --oneline"}, want: Allow},
		{name: "an upper-case key is the same key", args: map[string]any{"CMD": "ls; id"}, want: Ask},
		{name: "an array of commands with one compound", args: map[string]any{"cmd": []any{"ls", "ls;id"}}, want: Ask},
	})
	runSecurity(t, p, "sh", "build", []securityCase{
		{name: "a pipe the pattern holds", args: map[string]any{"command": "make all | tee log"}, want: Allow},
		{name: "a semicolon the pattern lacks", args: map[string]any{"command": "make all | tee log; id"}, want: Ask},
	})
}

func TestShellSyntaxStillMeetsDeny(t *testing.T) {
	t.Parallel()
	// The command rule narrows allows only: a deny still sees the value.
	p := mustCompile(t, global(PolicySpec{Deny: []string{"mcp:sh:*:cmd=*rm *"}, Allow: []string{"mcp:sh:*"}}))
	runSecurity(t, p, "sh", "run", []securityCase{
		{name: "a compound command with rm", args: map[string]any{"cmd": "ls; rm -rf /"}, want: Deny},
		{name: "a compound command without rm", args: map[string]any{"cmd": "ls; id"}, want: Allow},
	})
}
