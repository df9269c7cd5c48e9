package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMisconfigurationsSayWhereAndWhatToWrite goes through the mistakes a
// new user makes (issue 37's unclear and bad ones): each exits with the
// contract's code and its message names the file, the line and column
// where one exists, the key as written and what to write instead.
func TestMisconfigurationsSayWhereAndWhatToWrite(t *testing.T) {
	t.Parallel()
	const fs = "servers:\n  fs:\n    command: npx\n"
	const noFile = "\x00" // the text of a config not written
	offline := []string{"validate", "--offline"}
	strict := []string{"validate", "--offline", "--strict"}
	tests := []struct {
		name string
		file string // the config's name; its text below
		text string
		args []string // the command; --config FILE is added
		code int
		want []string // place, key and fix
	}{
		{"args written as a string", "mcpwarden.yaml", fs + "    args: \"-y pkg\"\n", offline, exitUsage,
			[]string{"mcpwarden.yaml:4:5", "servers.fs.args", "want a list, e.g. args: [-y, pkg]"}},
		{"a duration without its unit", "mcpwarden.yaml", fs + "startup_wait: 10\n", offline, exitUsage,
			[]string{"mcpwarden.yaml:4:1", "startup_wait", "durations look like 30s, 5m, 1h"}},
		{"a duration with an unknown unit", "mcpwarden.yaml", fs + "ask:\n  timeout: 2 minutes\n", offline, exitUsage,
			[]string{"mcpwarden.yaml:5:3", "ask.timeout", "durations look like 30s, 5m, 1h", `got text "2 minutes"`}},
		{"a misspelt server key", "mcpwarden.yaml", fs + "    comand: npx\n", offline, exitUsage,
			[]string{"mcpwarden.yaml:4:5", "servers.fs.comand", "did you mean servers.fs.command?"}},
		{"a misspelt top-level key", "mcpwarden.yaml", fs + "polcy:\n  default: deny\n", offline, exitUsage,
			[]string{"mcpwarden.yaml:4:1", "polcy", "did you mean policy?"}},
		{"a key far from any says which keys belong there", "mcpwarden.yaml", fs + "audit:\n  banana: 1\n", offline, exitUsage,
			[]string{"mcpwarden.yaml:5:3", "audit.banana", "the keys under audit are"}},
		{"yes for a boolean", "mcpwarden.yaml", fs + "    resolve_symlinks: maybe\n", offline, exitUsage,
			[]string{"mcpwarden.yaml:4:5", "servers.fs.resolve_symlinks", "want true or false"}},
		{"words for a number", "mcpwarden.yaml", fs + "max_inflight_mb: lots\n", offline, exitUsage,
			[]string{"mcpwarden.yaml:4:1", "max_inflight_mb", "want a whole number"}},
		{"env written as a list", "mcpwarden.yaml", fs + "    env: [TOKEN=x]\n", offline, exitUsage,
			[]string{"mcpwarden.yaml:4:5", "servers.fs.env", "want a section of names and values, e.g. env: {name: value}"}},
		{"a number for a command in JSON", "mcpwarden.json", `{"servers": {"fs": {"command": 5}}}`, offline, exitUsage,
			[]string{"mcpwarden.json:1:21", "servers.fs.command", "want text, e.g. command: npx"}},
		{"a trailing comma in JSON", "mcpwarden.json", "{\"servers\": {\"fs\": {\"command\": \"npx\",}}}", offline, exitUsage,
			[]string{"mcpwarden.json:1:38", "invalid JSON"}},
		{"an unclosed string in TOML", "mcpwarden.toml", "[servers.fs]\ncommand = \"npx\n", offline, exitUsage,
			[]string{"mcpwarden.toml:2:15", "invalid TOML"}},
		{"a misspelt key in TOML", "mcpwarden.toml", "[servers.fs]\ncommand = \"npx\"\nargz = [\"-y\"]\n", offline, exitUsage,
			[]string{"mcpwarden.toml:3:1", "servers.fs.argz", "did you mean servers.fs.args?"}},
		{"a duration without its unit in TOML", "mcpwarden.toml", "startup_wait = 10\n[servers.fs]\ncommand = \"npx\"\n", offline, exitUsage,
			[]string{"mcpwarden.toml:1:1", "startup_wait", "durations look like"}},
		{"broken YAML", "mcpwarden.yaml", fs + "  x: [\n", offline, exitUsage,
			[]string{"mcpwarden.yaml:4: invalid YAML"}},
		{"a log level that does not exist", "mcpwarden.yaml", fs + "log:\n  level: verbose\n", offline, exitUsage,
			[]string{"mcpwarden.yaml:5:3", "log.level", "debug, info, warn, error"}},
		{"a server without a command", "mcpwarden.yaml", "servers:\n  fs:\n    args: [x]\n", offline, exitUsage,
			[]string{"mcpwarden.yaml:2:3", "servers.fs.command", "required for a stdio server"}},
		{"a rule written as a call", "mcpwarden.yaml", fs + "policy:\n  allow: [\"read_file(path=/tmp/*)\"]\n", offline, exitUsage,
			[]string{"mcpwarden.yaml:5:11", "policy.allow[0]", `write "mcp:<server>:read_file:path=/tmp/*"`}},
		{"a rule written as a client's tool name", "mcpwarden.yaml", fs + "policy:\n  deny: [mcp__fs__write_file]\n", offline, exitUsage,
			[]string{"mcpwarden.yaml:5:10", "policy.deny[0]", `write "mcp:fs:write_file"`}},
		{"a file in no format mcpwarden reads", "mcpwarden.ini", "[servers]\n", offline, exitUsage,
			[]string{"mcpwarden.ini", "use .yaml, .json or .toml"}},
		{"outside_workspace without a workspace", "mcpwarden.yaml", fs + "policy:\n  outside_workspace: deny\n", strict, exitError,
			[]string{"mcpwarden.yaml:5:3", "policy.outside_workspace", "has no effect", "add workspace:"}},
		{"a ${VAR} in args", "mcpwarden.yaml", fs + "    args: [\"${HOME}/src\"]\n", strict, exitError,
			[]string{"mcpwarden.yaml:4:12", "servers.fs.args[0]", "expanded only in env and headers", "set it in env"}},
		{"a ${VAR} in cwd", "mcpwarden.yaml", fs + "    cwd: ${PROJECT}\n", strict, exitError,
			[]string{"mcpwarden.yaml:4:5", "servers.fs.cwd", "${PROJECT} is used as written"}},
		{"an allow of every tool of every server", "mcpwarden.yaml", fs + "policy:\n  allow: [\"mcp:*:*\"]\n", strict, exitError,
			[]string{"mcpwarden.yaml:5:11", "policy.allow[0]", "allows every tool of every server", "mcp:fs:*"}},
		{"a rule naming a server the config lacks", "mcpwarden.yaml", fs + "policy:\n  deny: [\"mcp:fz:*\"]\n", strict, exitError,
			[]string{"mcpwarden.yaml:5:10", "policy.deny[0]", "never matches", `did you mean "fs"?`}},
		{"a profile naming a server the config lacks", "mcpwarden.yaml", fs + "profiles:\n  ci:\n    servers: [fz]\n", strict, exitError,
			[]string{"mcpwarden.yaml:6:15", "profiles.ci.servers[0]", `did you mean "fs"?`}},
		{"a cwd that does not exist", "mcpwarden.yaml", fs + "    cwd: ./no-such-dir\n", strict, exitError,
			[]string{"mcpwarden.yaml:4:5", "servers.fs.cwd", "is not a directory here", "create it or correct cwd"}},
		{"a cwd that does not exist, at start", "mcpwarden.yaml", fs + "    cwd: ./no-such-dir\n", []string{"tools"}, exitError,
			[]string{"starting: config ", "mcpwarden.yaml:4:5: servers.fs.cwd", "no-such-dir\": it does not exist", "create the folder or correct cwd"}},
		{"check of a server the config lacks", "mcpwarden.yaml", fs, []string{"check", "mcp:fz:read_file"}, exitUsage,
			[]string{`no server "fz" in the config`, "servers: fs", "did you mean mcp:fs:...?"}},
		{"check where outside_workspace has no effect says so", "mcpwarden.yaml", fs + "policy:\n  outside_workspace: deny\n  allow: [\"mcp:fs:*\"]\n",
			[]string{"check", "mcp:fs:read_file", `{"path":"/etc/passwd"}`}, 0,
			[]string{"ALLOW", "mcpwarden.yaml:5:3", "policy.outside_workspace", "has no effect"}},
		{"check for a misspelt profile", "mcpwarden.yaml", fs + "profiles:\n  ci: {}\n", []string{"check", "mcp:fs:read_file", "--profile", "cj"}, exitUsage,
			[]string{`--profile "cj": the config has no such profile; profiles: ci`, `did you mean "ci"?`}},
		{"check after a misspelt label", "mcpwarden.yaml", fs + "labels:\n  untrusted_input: [\"mcp:fs:*\"]\n", []string{"check", "mcp:fs:read_file", "--after", "untrusted_inputs"}, exitUsage,
			[]string{"--after", "untrusted_inputs", `did you mean "untrusted_input"?`}},
		{"serve for a misspelt profile", "mcpwarden.yaml", fs + "profiles:\n  ci: {}\n", []string{"serve", "--profile", "cj"}, exitUsage,
			[]string{`--profile "cj"`, `did you mean "ci"?`}},
		{"a misspelt flag", "mcpwarden.yaml", fs, []string{"validate", "--ofline"}, exitUsage,
			[]string{"unknown flag: --ofline", "did you mean --offline?"}},
		{"a config file that does not exist", "mcpwarden.yaml", noFile, offline, exitUsage,
			[]string{"mcpwarden.yaml does not exist", "correct --config", "mcpwarden import writes one", "examples/quickstart.yaml"}},
		{"an empty config file", "mcpwarden.yaml", "", offline, exitUsage,
			[]string{"mcpwarden.yaml", "servers", "add at least one under servers:"}},
		{"a client's mcpServers as the config", "mcpwarden.yaml", "mcpServers:\n  fs:\n    command: npx\n", offline, exitUsage,
			[]string{"mcpwarden.yaml:1:1", "mcpServers", "did you mean servers?", "mcpwarden import FILE converts"}},
		{"a client's mcpServers as the config in JSON", "mcpwarden.json", `{"mcpServers": {"fs": {"command": "npx"}}}`, offline, exitUsage,
			[]string{"mcpwarden.json:1:2", "mcpServers", "did you mean servers?"}},
		{"servers written as a list", "mcpwarden.yaml", "servers:\n  - name: fs\n    command: npx\n", offline, exitUsage,
			[]string{"mcpwarden.yaml:1:1", "servers", "e.g. servers: {fs: {command: npx", "got a list"}},
		{"a server name with a space", "mcpwarden.yaml", "servers:\n  fs tools:\n    command: npx\n", offline, exitUsage,
			[]string{"mcpwarden.yaml:2:3", `"fs tools" is not a server name`, "write fs-tools"}},
		{"a command with its arguments in it", "mcpwarden.yaml", "servers:\n  fs:\n    command: npx -y pkg\n", strict, exitError,
			[]string{"mcpwarden.yaml:3:5", "servers.fs.command", "command: npx, args: [-y, pkg]"}},
		{"a $VAR without braces in env", "mcpwarden.yaml", fs + "    env:\n      TOKEN: $GITHUB_TOKEN\n", strict, exitError,
			[]string{"mcpwarden.yaml:5:7", "servers.fs.env.TOKEN", "$GITHUB_TOKEN is used as written", "write ${GITHUB_TOKEN}"}},
		{"a $VAR without braces in a header", "mcpwarden.yaml", "servers:\n  api:\n    url: https://example.com/mcp\n    headers:\n      Authorization: Bearer $API_TOKEN\n", strict, exitError,
			[]string{"mcpwarden.yaml:5:7", "servers.api.headers.Authorization", "write ${API_TOKEN}"}},
		{"an unset variable offline says where", "mcpwarden.yaml", fs + "    env:\n      TOKEN: ${MCPWARDEN_TEST_UNSET_37}\n", offline, 0,
			[]string{"mcpwarden.yaml:5:7", "servers.fs.env.TOKEN", "${MCPWARDEN_TEST_UNSET_37:-value}"}},
		{"an unset variable refuses the start", "mcpwarden.yaml", fs + "    env:\n      TOKEN: ${MCPWARDEN_TEST_UNSET_37}\n", []string{"validate"}, exitUsage,
			[]string{"mcpwarden.yaml:5:7", "servers.fs.env.TOKEN", "set it in the environment", "${MCPWARDEN_TEST_UNSET_37:-value}"}},
		{"listen without a port", "mcpwarden.yaml", fs + "listen: localhost\n", offline, exitUsage,
			[]string{"mcpwarden.yaml:4:1", "listen", "missing port", "listen: 127.0.0.1:8765"}},
		{"listen on a port that cannot be", "mcpwarden.yaml", fs + "listen: 127.0.0.1:99999\n", offline, exitUsage,
			[]string{"mcpwarden.yaml:4:1", "listen", "port 99999", "listen: 127.0.0.1:8765"}},
		{"a misspelt transport", "mcpwarden.yaml", "servers:\n  api:\n    url: https://example.com/mcp\n    transport: htpp\n", offline, exitUsage,
			[]string{"mcpwarden.yaml:4:5", "servers.api.transport", `did you mean "http"?`}},
		{"yes written for approvals", "mcpwarden.yaml", fs + "ask:\n  approvals: true\n", offline, exitUsage,
			[]string{"mcpwarden.yaml:5:3", "ask.approvals", "e.g. approvals: local"}},
		{"a duration without its unit in a list", "mcpwarden.yaml", fs + "limits:\n  - match: \"mcp:fs:*\"\n    max: 5\n    window: 1 minute\n", offline, exitUsage,
			[]string{"mcpwarden.yaml:7:5", "limits[0].window", "durations look like", `got text "1 minute"`}},
		{"a key written twice in TOML", "mcpwarden.toml", "[servers.fs]\ncommand = \"npx\"\ncommand = \"node\"\n", offline, exitUsage,
			[]string{"mcpwarden.toml:3:1", "key command is already defined", "write each key and table once"}},
		{"a table written twice in TOML", "mcpwarden.toml", "[servers.fs]\ncommand = \"npx\"\n[servers.fs]\ncommand = \"node\"\n", offline, exitUsage,
			[]string{"mcpwarden.toml:3:1", "table fs already exists", "write each key and table once"}},
		{"a key written twice in JSON", "mcpwarden.json", "{\"servers\": {\"fs\": {\"command\": \"npx\"}},\n \"policy\": {\"deny\": [\"mcp:fs:write_file\"]},\n \"policy\": {\"default\": \"allow\"}}", offline, exitUsage,
			[]string{"mcpwarden.json:3:2", "policy is written twice", "write it once"}},
		{"a tab in YAML's indentation", "mcpwarden.yaml", "servers:\n  fs:\n\tcommand: npx\n", offline, exitUsage,
			[]string{"mcpwarden.yaml:3", "invalid YAML", "indent with spaces, not tabs"}},
		{"a sandbox turned off says where", "mcpwarden.yaml", fs + "sandbox: off\n", offline, 0,
			[]string{"mcpwarden.yaml:4:1", "servers.fs", "sandbox is off"}},
		{"check of a client's tool name", "mcpwarden.yaml", fs, []string{"check", "fs__read_file"}, exitUsage,
			[]string{`tool "fs__read_file"`, "did you mean mcp:fs:read_file?"}},
		{"check of Claude Code's tool name", "mcpwarden.yaml", fs, []string{"check", "mcp__mcpwarden__fs__read_file"}, exitUsage,
			[]string{"did you mean mcp:fs:read_file?"}},
		{"check of a tool without its server", "mcpwarden.yaml", fs, []string{"check", "read_file"}, exitUsage,
			[]string{`tool "read_file"`, "want a canonical name mcp:<server>:<tool>", "did you mean mcp:fs:read_file?"}},
		{"check with arguments that are not JSON", "mcpwarden.yaml", fs, []string{"check", "mcp:fs:read_file", `{"path": }`}, exitUsage,
			[]string{"arguments: invalid JSON at column 10", `e.g. '{"path": "README.md"}'`, "--arg key=value"}},
		{"check with arguments that are a list", "mcpwarden.yaml", fs, []string{"check", "mcp:fs:read_file", `["README.md"]`}, exitUsage,
			[]string{"arguments must be a JSON object, not an array", `e.g. '{"path": "README.md"}'`}},
		{"check for a profile of a config without profiles", "mcpwarden.yaml", fs, []string{"check", "mcp:fs:read_file", "--profile", "ci"}, exitUsage,
			[]string{`--profile "ci"`, "has no profiles", "define it under profiles:", "or drop it"}},
		{"approvals of a config without an approvals page", "mcpwarden.yaml", fs, []string{"approvals"}, exitUsage,
			[]string{"mcpwarden.yaml does not set ask.approvals: local", "add it (ask: {approvals: local})"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), tc.file)
			if tc.text != noFile {
				if err := os.WriteFile(path, []byte(tc.text), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			args := append([]string{tc.args[0], "--config", path}, tc.args[1:]...)
			code, out, errOut := run(t, args...)
			all := out + errOut
			if code != tc.code {
				t.Errorf("exit %d, want %d:\n%s", code, tc.code, all)
			}
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("output lacks %q:\n%s", w, all)
				}
			}
		})
	}
}
