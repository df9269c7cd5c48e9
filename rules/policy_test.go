package rules

import "testing"

func TestDecide(t *testing.T) {
	t.Parallel()
	fsRoot := map[string]ServerSpec{"fs": {Root: "/srv/app"}}
	tests := []struct {
		name     string
		spec     Spec
		tool     string // on server fs unless server is set
		server   string
		args     string
		want     Decision
		wantRule string
	}{
		{
			name: "an empty policy asks by default",
			tool: "read_file", want: Ask, wantRule: "default",
		},
		{
			name: "the global default applies when no rule matches",
			spec: global(PolicySpec{Default: "deny"}),
			tool: "read_file", want: Deny, wantRule: "default",
		},
		{
			name: "an allow without conditions allows",
			spec: global(PolicySpec{Allow: []string{"mcp:fs:read_file"}}),
			tool: "read_file", want: Allow, wantRule: "mcp:fs:read_file",
		},
		{
			name: "a tool glob matches",
			spec: global(PolicySpec{Allow: []string{"mcp:fs:read_*"}}),
			tool: "read_text_file", want: Allow, wantRule: "mcp:fs:read_*",
		},
		{
			name: "a server glob matches",
			spec: global(PolicySpec{Deny: []string{"mcp:*:delete_*"}}),
			tool: "delete_file", want: Deny, wantRule: "mcp:*:delete_*",
		},
		{
			name: "a rule for another server does not match",
			spec: global(PolicySpec{Allow: []string{"mcp:git:read_file"}}),
			tool: "read_file", want: Ask, wantRule: "default",
		},
		{
			name: "deny beats an allow listed first",
			spec: global(PolicySpec{Allow: []string{"mcp:fs:*"}, Deny: []string{"mcp:fs:write_file"}}),
			tool: "write_file", want: Deny, wantRule: "mcp:fs:write_file",
		},
		{
			name: "a narrow ask is carved out of a broad allow",
			spec: global(PolicySpec{Allow: []string{"mcp:fs:*"}, Ask: []string{"mcp:fs:write_file"}}),
			tool: "write_file", want: Ask, wantRule: "mcp:fs:write_file",
		},
		{
			name: "deny beats ask",
			spec: global(PolicySpec{Ask: []string{"mcp:fs:*"}, Deny: []string{"mcp:fs:*:path=/etc/**"}}),
			tool: "read_file", args: `{"path":"/etc/passwd"}`, want: Deny, wantRule: "mcp:fs:*:path=/etc/**",
		},
		{
			name: "the first matching rule of a list is named",
			spec: global(PolicySpec{Deny: []string{"mcp:fs:x", "mcp:*:*", "mcp:fs:*", "mcp:fs:read_file"}}),
			tool: "read_file", want: Deny, wantRule: "mcp:*:*",
		},
		{
			name: "a path glob matches within the tree",
			spec: global(PolicySpec{Allow: []string{"mcp:fs:read_*:path=/srv/app/**"}}),
			tool: "read_file", args: `{"path":"/srv/app/cmd/main.go"}`, want: Allow, wantRule: "mcp:fs:read_*:path=/srv/app/**",
		},
		{
			name: "a path glob does not match a sibling with the same prefix",
			spec: global(PolicySpec{Allow: []string{"mcp:fs:read_*:path=/srv/app/**"}}),
			tool: "read_file", args: `{"path":"/srv/apple/x"}`, want: Ask, wantRule: "default",
		},
		{
			name: "a trailing /** also matches the directory itself",
			spec: global(PolicySpec{Deny: []string{"mcp:fs:move_file:source=/etc/**"}}),
			tool: "move_file", args: `{"source":"/etc","destination":"/tmp/etc"}`, want: Deny, wantRule: "mcp:fs:move_file:source=/etc/**",
		},
		{
			name: "a single star stays within a path segment",
			spec: global(PolicySpec{Allow: []string{"mcp:fs:read_file:path=/home/*"}}),
			tool: "read_file", args: `{"path":"/home/a/b"}`, want: Ask, wantRule: "default",
		},
		{
			name:   "a star matches across slashes on a key that is not a path",
			spec:   global(PolicySpec{Allow: []string{"mcp:web:fetch:url=https://*"}}),
			server: "web", tool: "fetch", args: `{"url":"https://a.example/x/y"}`, want: Allow, wantRule: "mcp:web:fetch:url=https://*",
		},
		{
			name:   "a command glob matches a command line",
			spec:   global(PolicySpec{Allow: []string{"mcp:sh:run:cmd=ls*"}}),
			server: "sh", tool: "run", args: `{"cmd":"ls -la /tmp"}`, want: Allow, wantRule: "mcp:sh:run:cmd=ls*",
		},
		{
			name:   "a regexp is anchored at both ends",
			spec:   global(PolicySpec{Allow: []string{"mcp:sh:run:cmd~=ls( -[a-z]+)?"}}),
			server: "sh", tool: "run", args: `{"cmd":"ls -la; rm -rf /"}`, want: Ask, wantRule: "default",
		},
		{
			name:   "a regexp with (?i) matches case-insensitively",
			spec:   global(PolicySpec{Deny: []string{"mcp:sh:run:cmd~=(?i).*drop table.*"}}),
			server: "sh", tool: "run", args: `{"cmd":"psql -c 'DROP TABLE x'"}`, want: Deny, wantRule: "mcp:sh:run:cmd~=(?i).*drop table.*",
		},
		{
			name: "a negated glob denies what is not listed",
			spec: global(PolicySpec{Deny: []string{"mcp:fs:edit_file:path!=**/*.kt"}}),
			tool: "edit_file", args: `{"path":"/srv/app/x.go"}`, want: Deny, wantRule: "mcp:fs:edit_file:path!=**/*.kt",
		},
		{
			name: "a negated glob lets through what is listed",
			spec: global(PolicySpec{Deny: []string{"mcp:fs:edit_file:path!=**/*.kt"}}),
			tool: "edit_file", args: `{"path":"/srv/app/x.kt"}`, want: Ask, wantRule: "default",
		},
		{
			name: "all conditions of a rule must hold",
			spec: global(PolicySpec{Allow: []string{"mcp:fs:write_file:path=/tmp/**:mode=0644"}}),
			tool: "write_file", args: `{"path":"/tmp/x","mode":"0755"}`, want: Ask, wantRule: "default",
		},
		{
			name: "a dotted key reaches into a nested object",
			spec: global(PolicySpec{Deny: []string{"mcp:fs:*:options.path=/etc/**"}}),
			tool: "search", args: `{"options":{"path":"/etc/shadow"}}`, want: Deny, wantRule: "mcp:fs:*:options.path=/etc/**",
		},
		{
			name: "a dotted key reaches through an array of objects",
			spec: global(PolicySpec{Deny: []string{"mcp:fs:*:edits.path=/etc/**"}}),
			tool: "multi_edit", args: `{"edits":[{"path":"/tmp/a"},{"path":"/etc/hosts"}]}`, want: Deny, wantRule: "mcp:fs:*:edits.path=/etc/**",
		},
		{
			name: "an object matches only through a dotted key",
			spec: global(PolicySpec{Allow: []string{"mcp:fs:*:options=*"}}),
			tool: "search", args: `{"options":{"a":1}}`, want: Ask, wantRule: "default",
		},
		{
			name:   "a number matches by its JSON text",
			spec:   global(PolicySpec{Allow: []string{"mcp:db:query:limit=1*"}}),
			server: "db", tool: "query", args: `{"limit":100}`, want: Allow, wantRule: "mcp:db:query:limit=1*",
		},
		{
			name:   "a float written 1.0 reads 1",
			spec:   global(PolicySpec{Allow: []string{"mcp:db:query:limit=1"}}),
			server: "db", tool: "query", args: `{"limit":1.0}`, want: Allow, wantRule: "mcp:db:query:limit=1",
		},
		{
			name:   "a number sent as a string matches the same pattern",
			spec:   global(PolicySpec{Allow: []string{"mcp:db:query:limit=1*"}}),
			server: "db", tool: "query", args: `{"limit":"100"}`, want: Allow, wantRule: "mcp:db:query:limit=1*",
		},
		{
			name:   "a string pattern matches a number sent instead of a string",
			spec:   global(PolicySpec{Deny: []string{"mcp:db:query:id=42"}}),
			server: "db", tool: "query", args: `{"id":42}`, want: Deny, wantRule: "mcp:db:query:id=42",
		},
		{
			name:   "a boolean matches by its JSON text",
			spec:   global(PolicySpec{Deny: []string{"mcp:git:push:force=true"}}),
			server: "git", tool: "push", args: `{"force":true}`, want: Deny, wantRule: "mcp:git:push:force=true",
		},
		{
			name:   "null matches as null",
			spec:   global(PolicySpec{Allow: []string{"mcp:git:log:branch=null"}}),
			server: "git", tool: "log", args: `{"branch":null}`, want: Allow, wantRule: "mcp:git:log:branch=null",
		},
		{
			name:   "a large integer keeps its digits",
			spec:   global(PolicySpec{Deny: []string{"mcp:db:query:id=9007199254740993"}}),
			server: "db", tool: "query", args: `{"id":"9007199254740993"}`, want: Deny, wantRule: "mcp:db:query:id=9007199254740993",
		},
		{
			name: "an allow does not match an absent key",
			spec: global(PolicySpec{Allow: []string{"mcp:fs:read_file:path=/srv/**"}}),
			tool: "read_file", args: `{}`, want: Ask, wantRule: "default",
		},
		{
			name: "a deny with = does not match an absent key",
			spec: global(PolicySpec{Deny: []string{"mcp:fs:read_file:path=/etc/**"}}),
			tool: "read_file", args: `{}`, want: Ask, wantRule: "default",
		},
		{
			name: "a deny with != matches an absent key",
			spec: global(PolicySpec{Deny: []string{"mcp:fs:edit_file:path!=**/*.kt"}}),
			tool: "edit_file", args: `{}`, want: Deny, wantRule: "mcp:fs:edit_file:path!=**/*.kt",
		},
		{
			name: "a deny matches if any element of an array matches",
			spec: global(PolicySpec{Deny: []string{"mcp:fs:*:paths=/etc/**"}}),
			tool: "read_multiple_files", args: `{"paths":["/srv/app/a","/etc/passwd"]}`, want: Deny, wantRule: "mcp:fs:*:paths=/etc/**",
		},
		{
			name: "an allow matches if every element of an array matches",
			spec: global(PolicySpec{Allow: []string{"mcp:fs:*:paths[]=/srv/app/**"}}),
			tool: "read_multiple_files", args: `{"paths":["/srv/app/a","/srv/app/b"]}`, want: Allow, wantRule: "mcp:fs:*:paths[]=/srv/app/**",
		},
		{
			name: "an allow does not match an empty array",
			spec: global(PolicySpec{Allow: []string{"mcp:fs:*:paths=/srv/app/**"}}),
			tool: "read_multiple_files", args: `{"paths":[]}`, want: Ask, wantRule: "default",
		},
		{
			name: "a != deny matches an empty array, which counts as absent",
			spec: global(PolicySpec{Deny: []string{"mcp:fs:*:paths!=/srv/app/**"}}),
			tool: "read_multiple_files", args: `{"paths":[]}`, want: Deny, wantRule: "mcp:fs:*:paths!=/srv/app/**",
		},
		{
			name: "a relative path is joined to the server root",
			spec: Spec{Global: PolicySpec{Allow: []string{"mcp:fs:read_file:path=/srv/app/**"}}, Servers: fsRoot},
			tool: "read_file", args: `{"path":"cmd/main.go"}`, want: Allow, wantRule: "mcp:fs:read_file:path=/srv/app/**",
		},
		{
			name: "a relative path never satisfies an allow without a root",
			spec: global(PolicySpec{Allow: []string{"mcp:fs:read_file:path=**"}}),
			tool: "read_file", args: `{"path":"cmd/main.go"}`, want: Ask, wantRule: "default",
		},
		{
			name: "a relative path without a root is denied when rooted at / it matches",
			spec: global(PolicySpec{Deny: []string{"mcp:fs:*:path=/etc/**"}}),
			tool: "read_file", args: `{"path":"../../../etc/passwd"}`, want: Deny, wantRule: "mcp:fs:*:path=/etc/**",
		},
		{
			name: "a relative path without a root is denied when as written it matches",
			spec: global(PolicySpec{Deny: []string{"mcp:*:*:path=**/.env"}}),
			tool: "read_file", args: `{"path":"config/.env"}`, want: Deny, wantRule: "mcp:*:*:path=**/.env",
		},
		{
			name: "a path-like key is recognised by its last segment",
			spec: Spec{Global: PolicySpec{Deny: []string{"mcp:fs:*:options.path=/etc/**"}}, Servers: fsRoot},
			tool: "search", args: `{"options":{"path":"../../etc/passwd"}}`, want: Deny, wantRule: "mcp:fs:*:options.path=/etc/**",
		},
		{
			name: "the path keys are configurable",
			spec: Spec{Global: PolicySpec{Deny: []string{"mcp:fs:*:target=/etc/**"}}, PathKeys: []string{"target"}},
			tool: "copy", args: `{"target":"/tmp/../etc/passwd"}`, want: Deny, wantRule: "mcp:fs:*:target=/etc/**",
		},
		{
			name: "a key outside the configured path keys is not normalised",
			spec: Spec{Global: PolicySpec{Deny: []string{"mcp:fs:*:path=/etc/**"}}, PathKeys: []string{"target"}},
			tool: "copy", args: `{"path":"/tmp/../etc/passwd"}`, want: Ask, wantRule: "default",
		},
		{
			name:   "a pattern may hold a colon after an equals sign",
			spec:   global(PolicySpec{Deny: []string{"mcp:web:fetch:url=http://*:8080/*"}}),
			server: "web", tool: "fetch", args: `{"url":"http://localhost:8080/admin"}`, want: Deny, wantRule: "mcp:web:fetch:url=http://*:8080/*",
		},
		{
			name:   "an escaped colon keeps a key-like text in the pattern",
			spec:   global(PolicySpec{Allow: []string{`mcp:sh:run:cmd=echo a\:b=c`}}),
			server: "sh", tool: "run", args: `{"cmd":"echo a:b=c"}`, want: Allow, wantRule: `mcp:sh:run:cmd=echo a\:b=c`,
		},
		{
			name: "matching is case-sensitive",
			spec: global(PolicySpec{Allow: []string{"mcp:fs:read_file"}}),
			tool: "Read_File", want: Ask, wantRule: "default",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := mustCompile(t, tt.spec)
			server := tt.server
			if server == "" {
				server = "fs"
			}
			got := decideBoth(t, p, Call{Server: server, Tool: tt.tool}, tt.args)
			if got.Decision != tt.want || got.Rule != tt.wantRule {
				t.Errorf("Decide = %v by %q (%s), want %v by %q", got.Decision, got.Rule, got.Reason, tt.want, tt.wantRule)
			}
		})
	}
}
