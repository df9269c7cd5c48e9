package config

import (
	"strings"
	"testing"
)

func TestLintNamesWhatTheConfigSilentlyIgnores(t *testing.T) {
	t.Parallel()
	const fs = "servers:\n  fs:\n    command: npx\n"
	tests := []struct {
		name, text string
		want       []string // the key, the place and the fix of one warning
	}{
		{"outside_workspace without a workspace has no effect", fs + "policy:\n  outside_workspace: deny\n",
			[]string{"policy.outside_workspace", "config:5:3", "has no effect without policy.workspace", "add workspace:"}},
		{"outside_workspace without a workspace in a server's policy has no effect", "servers:\n  fs:\n    command: npx\n    policy: {outside_workspace: ask}\n",
			[]string{"servers.fs.policy.outside_workspace", "config:4:14", "has no effect"}},
		{"a ${VAR} in args is passed as written", "servers:\n  fs:\n    command: npx\n    args: [-y, \"${ROOT}/x\"]\n",
			[]string{"servers.fs.args[1]", "config:4:16", "${ROOT} is used as written", "set it in env"}},
		{"a ${VAR} in a command is used as written", "servers:\n  fs:\n    command: ${HOME}/bin/fs\n",
			[]string{"servers.fs.command", "config:3:5", "${HOME} is used as written"}},
		{"a ${VAR} in a url is used as written", "servers:\n  gh:\n    url: https://example.com/${TEAM}/mcp\n",
			[]string{"servers.gh.url", "config:3:5", "${TEAM} is used as written"}},
		{"an allow of every tool of every server is named", fs + "policy:\n  allow: [\"mcp:*:*\"]\n",
			[]string{"policy.allow[0]", "config:5:11", "allows every tool of every server", "mcp:fs:*"}},
		{"an allow of every tool in a profile is named", fs + "profiles:\n  ci:\n    policy: {allow: [\"mcp:*:**\"]}\n",
			[]string{"profiles.ci.policy.allow[0]", "allows every tool of every server"}},
		{"a rule naming a server the config lacks never matches", fs + "policy:\n  deny: [\"mcp:fz:*\"]\n",
			[]string{"policy.deny[0]", "names server \"fz\", which the config does not have", `did you mean "fs"?`}},
		{"a profile naming a server the config lacks sees nothing by it", fs + "profiles:\n  ci:\n    servers: [fz]\n",
			[]string{"profiles.ci.servers[0]", "config:6:15", "names no server in the config", `did you mean "fs"?`}},
		{"a cwd that does not exist is named before the server is started", fs + "    cwd: /nonexistent/mcpwarden-test\n",
			[]string{"servers.fs.cwd", "config:4:5", "is not a directory here", "create it or correct cwd"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse([]byte(tc.text), ".yaml", "/", nil)
			if err != nil {
				t.Fatal(err)
			}
			var all []string
			for _, w := range cfg.Lint() {
				all = append(all, w.String())
			}
			joined := strings.Join(all, "\n")
			for _, w := range tc.want {
				if !strings.Contains(joined, w) {
					t.Errorf("warnings %q lack %q", joined, w)
				}
			}
		})
	}
}

func TestLintIsQuietForAConfigThatMeansWhatItSays(t *testing.T) {
	t.Parallel()
	text := "servers:\n  fs:\n    command: npx\n    args: [-y, pkg]\n    env: {TOKEN: \"${TOKEN}\"}\n    policy: {allow: [\"mcp:*:*\"]}\npolicy:\n  workspace: [/srv]\n  outside_workspace: deny\n  allow: [\"mcp:fs:*\", \"mcp:*:read_file\"]\n  deny: [\"mcp:*:*:path=**/.env\"]\nprofiles:\n  ci:\n    servers: [\"f*\"]\n"
	cfg, err := Parse([]byte(text), ".yaml", "/", []string{"TOKEN=x"})
	if err != nil {
		t.Fatal(err)
	}
	if ws := cfg.Lint(); len(ws) > 0 {
		t.Errorf("Lint = %v, want none", ws)
	}
}
