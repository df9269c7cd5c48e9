package clientconfig

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/rules"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/import")

// The samples under testdata/import, one per format, each in the place
// and under the name the client uses.
var samples = []struct {
	dir, file string
	format    Format
	settings  string // a Claude Code settings file with permissions, if any
}{
	{"claude-desktop", "claude_desktop_config.json", ClaudeDesktop, ""},
	{"claude-code", ".mcp.json", ClaudeCode, "settings.json"},
	{"cursor", ".cursor/mcp.json", Cursor, ""},
	{"vscode", ".vscode/mcp.json", VSCode, ""},
	{"opencode", "opencode.json", OpenCode, ""},
	{"gemini", ".gemini/settings.json", Gemini, ""},
	{"codex", ".codex/config.toml", Codex, ""},
}

// golden compares got with the golden file, or rewrites it with -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got; go test -update rewrites it):\n%s", path, diff)
	}
}

// report is the human summary of a Result that the golden files record.
func report(res *Result) []byte {
	var b strings.Builder
	for _, name := range sortedKeys(res.Names) {
		fmt.Fprintf(&b, "server %q -> %s\n", name, res.Names[name])
	}
	for _, v := range res.Vars {
		fmt.Fprintf(&b, "var %s at %s", v.Name, strings.Join(v.Where, ", "))
		if v.Secret != "" {
			b.WriteString(" (literal secret replaced)")
		}
		if v.ClientRef != "" {
			fmt.Fprintf(&b, " (from client %s)", v.ClientRef)
		}
		if v.Unexpanded {
			b.WriteString(" (not expanded there: fix by hand)")
		}
		if v.Optional {
			b.WriteString(" (optional: has a default)")
		}
		b.WriteByte('\n')
	}
	for _, s := range res.Skipped {
		fmt.Fprintf(&b, "skipped %s\n", s)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(&b, "note %s\n", n)
	}
	return []byte(b.String())
}

// fakeEnv sets every variable the result references.
func fakeEnv(res *Result) []string {
	var env []string
	for _, v := range res.Vars {
		env = append(env, v.Name+"=test-value")
	}
	return env
}

func TestImportRoundTrip(t *testing.T) {
	t.Parallel()
	for _, s := range samples {
		t.Run(s.dir, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join("testdata", "import", s.dir)
			path := filepath.Join(dir, s.file)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := Detect(path, data)
			if err != nil || f != s.format {
				t.Fatalf("Detect(%s) = %v, %v; want %v", path, f, err, s.format)
			}
			src, err := Parse(f, data)
			if err != nil {
				t.Fatal(err)
			}
			if s.settings != "" {
				sd, err := os.ReadFile(filepath.Join(dir, s.settings))
				if err != nil {
					t.Fatal(err)
				}
				if src.Permissions, err = ParsePermissions(sd); err != nil {
					t.Fatal(err)
				}
			}
			res, err := Convert(src, &Options{SourceName: s.file, WorkspaceDir: "/work/project", ProjectDir: "/work/project", Home: "/home/user"})
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join(dir, "mcpwarden.yaml.golden"), res.Config)
			golden(t, filepath.Join(dir, "report.golden"), report(res))

			// The generated config loads and validates, with its variables set.
			cfg, err := config.Parse(res.Config, ".yaml", "/etc/mcpwarden", fakeEnv(res))
			if err != nil {
				t.Fatalf("generated config does not load: %v\n%s", err, res.Config)
			}
			if cfg.Ask.Approvals != config.ApprovalsLocal {
				t.Errorf("ask.approvals = %q, want %q: an ask the client cannot show must reach someone", cfg.Ask.Approvals, config.ApprovalsLocal)
			}
			var keys []string
			for _, k := range res.Names {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if diff := cmp.Diff(keys, cfg.ServerNames()); diff != "" {
				t.Errorf("servers (-want +got):\n%s", diff)
			}
			for _, v := range res.Vars {
				if v.Secret != "" && strings.Contains(string(res.Config), v.Secret) {
					t.Errorf("the literal secret of %s was copied into the config", v.Name)
				}
			}

			// The rewritten client file keeps its other keys and runs only mcpwarden.
			entry := Entry{Command: "/usr/local/bin/mcpwarden", Args: []string{"serve", "--config", "/etc/mcpwarden/mcpwarden.yaml"}}
			rewritten, err := Rewrite(f, data, entry)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join(dir, "client"+filepath.Ext(s.file)+".golden"), rewritten)
			again, err := Parse(f, rewritten)
			if err != nil {
				t.Fatalf("rewritten client config does not parse: %v", err)
			}
			want := []Server{{Name: "mcpwarden", Command: entry.Command, Args: entry.Args, Transport: "stdio"}}
			if diff := cmp.Diff(want, again.Servers); diff != "" {
				t.Errorf("rewritten servers (-want +got):\n%s", diff)
			}
			if _, err := Convert(again, nil); !errors.Is(err, ErrNothingToImport) {
				t.Errorf("importing the rewritten file: got %v, want ErrNothingToImport", err)
			}
			before, _, _ := topLevel(stripJSONC(data))
			after, _, _ := topLevel(rewritten)
			for k := range before {
				if _, ok := after[k]; !ok {
					t.Errorf("rewrite dropped the key %q", k)
				}
			}
		})
	}
}

func TestDetectByContent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		path string
		data string
		want Format
	}{
		{"mcpServers alone is Claude Desktop", "config.json", `{"mcpServers":{"a":{"command":"x"}}}`, ClaudeDesktop},
		{"mcpServers with a type is Claude Code", "x.json", `{"mcpServers":{"a":{"type":"stdio","command":"x"}}}`, ClaudeCode},
		{"mcpServers with projects is Claude Code", "x.json", `{"projects":{},"mcpServers":{}}`, ClaudeCode},
		{"servers is VS Code", "mcp.json", `{"servers":{"a":{"type":"stdio","command":"x"}}}`, VSCode},
		{"mcp is OpenCode", "conf.json", `{"mcp":{"a":{"type":"local","command":["x"]}}}`, OpenCode},
		{"comments are accepted", "x.json", "{\n// c\n\"servers\": {},\n}", VSCode},
		{"the name wins", "/p/.cursor/mcp.json", `{"mcpServers":{}}`, Cursor},
		{"Claude Code's home file by name", "/home/u/.claude.json", `{}`, ClaudeCode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Detect(tt.path, []byte(tt.data))
			if err != nil || got != tt.want {
				t.Errorf("Detect = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	if _, err := Detect("x.json", []byte(`{"a":1}`)); err == nil {
		t.Error("Detect accepted a file without MCP servers")
	}
}

func TestPermissionRule(t *testing.T) {
	t.Parallel()
	names := map[string]string{"github": "github", "my__srv": "my__srv", "Brave Search": "brave-search"}
	tests := []struct {
		entry  string
		want   string
		ok     bool
		reason string
	}{
		{"mcp__github__create_issue", "mcp:github:create_issue", true, ""},
		{"mcp__github", "mcp:github:*", true, ""},
		{"mcp__github__*", "mcp:github:*", true, ""},
		{"mcp__github__get_*", "mcp:github:get_*", true, ""},
		{"mcp__my__srv__tool", "mcp:my__srv:tool", true, ""},
		{"mcp__Brave_Search__brave_web_search", "mcp:brave-search:brave_web_search", true, ""},
		{"mcp__Slack__post", "mcp:slack:post", true, `server "Slack" is not in the imported config`},
		{"Bash(rm -rf:*)", "", false, "not an MCP tool permission"},
		{"Read(./.env)", "", false, "not an MCP tool permission"},
		{"mcp__", "", false, "not an MCP tool permission"},
		{"mcp__github__a:b", "", false, "the tool name holds characters a rule cannot express"},
		{"mcp__mcpwarden__github__create_issue", "mcp:github:create_issue", true, ""},
		{"mcp__mcpwarden__brave-search__brave_web_search", "mcp:brave-search:brave_web_search", true, ""},
		{"mcp__mcpwarden", "", false, "it lets mcpwarden's tools through Claude Code's prompt; mcpwarden's policy decides them"},
		{"mcp__mcpwarden__*", "", false, "it lets mcpwarden's tools through Claude Code's prompt; mcpwarden's policy decides them"},
	}
	for _, tt := range tests {
		t.Run(tt.entry, func(t *testing.T) {
			t.Parallel()
			got, ok, why := PermissionRule(tt.entry, names)
			if got != tt.want || ok != tt.ok || why != tt.reason {
				t.Errorf("PermissionRule(%q) = %q, %v, %q; want %q, %v, %q", tt.entry, got, ok, why, tt.want, tt.ok, tt.reason)
			}
		})
	}
}

func TestServerKey(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, want string }{
		{"github", "github"},
		{"Brave Search", "brave-search"},
		{"weather.local", "weather-local"},
		{"_private", "private"},
		{"@scope/pkg", "scope-pkg"},
		{"ÜberTool", "bertool"},
		{"", "server"},
		{strings.Repeat("a", 40), strings.Repeat("a", 32)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := ServerKey(tt.name); got != tt.want || !rules.ValidServerName(got) {
				t.Errorf("ServerKey(%q) = %q, want %q", tt.name, got, tt.want)
			}
		})
	}
}

// convertedWithout converts s alone, from a Claude Desktop config, and
// fails the test if secret is in the config it writes.
func convertedWithout(t *testing.T, s Server, secret string) *Result {
	t.Helper()
	res, err := Convert(&Source{Format: ClaudeDesktop, Servers: []Server{s}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(res.Config), secret) {
		t.Errorf("the secret %q is in the config:\n%s", secret, res.Config)
	}
	return res
}

func TestLiteralSecretsAreNeverCopied(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		server Server
		secret string
		want   string // a line the config must hold
	}{
		{"a token in env", Server{Name: "gh", Command: "x", Transport: "stdio", Env: map[string]string{"GITHUB_TOKEN": "ghp_abcdefghijklmnopqrstuvwxyz0123"}}, "ghp_abcdefghijklmnopqrstuvwxyz0123", `GITHUB_TOKEN: "${GITHUB_TOKEN}"`},
		{"a secret by its key name", Server{Name: "db", Command: "x", Transport: "stdio", Env: map[string]string{"DB_PASSWORD": "hunter2"}}, "hunter2", `DB_PASSWORD: "${DB_PASSWORD}"`},
		{"a token format under a harmless key", Server{Name: "s", Command: "x", Transport: "stdio", Env: map[string]string{"CONFIG": "xoxb-1234567890-abcdef"}}, "xoxb-1234567890-abcdef", `CONFIG: "${CONFIG}"`},
		{"a bearer header keeps its scheme", Server{Name: "api", URL: "https://a.example/mcp", Transport: "http", Headers: map[string]string{"Authorization": "Bearer abc.def.ghi"}}, "abc.def.ghi", `Authorization: "Bearer ${API_TOKEN}"`},
		{"a password in a URL argument", Server{Name: "pg", Command: "x", Transport: "stdio", Args: []string{"postgres://u:pw123@h/db"}}, "postgres://u:pw123@h/db", `args: ["${PG_URL}"]`},
		{"a --token flag value", Server{Name: "t", Command: "x", Transport: "stdio", Args: []string{"--token", "abc123"}}, "abc123", `args: ["--token", "${T_TOKEN}"]`},
		{"a --api-key=value flag", Server{Name: "t", Command: "x", Transport: "stdio", Args: []string{"--api-key=abc123"}}, "abc123", `args: ["--api-key=${T_API_KEY}"]`},
		{"a key in the URL query", Server{Name: "q", URL: "https://a.example/mcp?api_key=zzz999", Transport: "http"}, "zzz999", `url: "https://a.example/mcp?api_key=${Q_API_KEY}"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := convertedWithout(t, tt.server, tt.secret)
			if !strings.Contains(string(res.Config), tt.want) {
				t.Errorf("config lacks %q:\n%s", tt.want, res.Config)
			}
			if len(res.Vars) != 1 || res.Vars[0].Secret == "" {
				t.Errorf("Vars = %+v, want one variable holding the secret", res.Vars)
			}
		})
	}
}

func TestHarmlessValuesPassThrough(t *testing.T) {
	t.Parallel()
	res, err := Convert(&Source{Format: ClaudeDesktop, Servers: []Server{{
		Name: "s", Command: "npx", Transport: "stdio", Args: []string{"-y", "pkg@1.2.3", "--port", "8080"},
		Env: map[string]string{"LOG_LEVEL": "debug", "NODE_ENV": "production", "PATH": "/usr/bin", "EMPTY": ""},
	}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`args: ["-y", "pkg@1.2.3", "--port", "8080"]`, "LOG_LEVEL: debug", "PATH: /usr/bin", `EMPTY: ""`} {
		if !strings.Contains(string(res.Config), want) {
			t.Errorf("config lacks %q:\n%s", want, res.Config)
		}
	}
	if len(res.Vars) != 0 {
		t.Errorf("Vars = %+v, want none", res.Vars)
	}
}

func TestSameNameDifferentSecretsGetTheirOwnVariables(t *testing.T) {
	t.Parallel()
	res, err := Convert(&Source{Format: ClaudeDesktop, Servers: []Server{
		{Name: "a", Command: "x", Transport: "stdio", Env: map[string]string{"API_KEY": "one"}},
		{Name: "b", Command: "x", Transport: "stdio", Env: map[string]string{"API_KEY": "two"}},
		{Name: "c", Command: "x", Transport: "stdio", Env: map[string]string{"API_KEY": "one"}},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range res.Vars {
		got = append(got, v.Name+"="+strings.Join(v.Where, ","))
	}
	want := []string{"API_KEY=servers.a.env.API_KEY,servers.c.env.API_KEY", "B_API_KEY=servers.b.env.API_KEY"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("vars (-want +got):\n%s", diff)
	}
}

func TestClashingServerNamesAreNumbered(t *testing.T) {
	t.Parallel()
	res, err := Convert(&Source{Format: ClaudeDesktop, Servers: []Server{
		{Name: "My Server", Command: "x", Transport: "stdio"},
		{Name: "my-server", Command: "y", Transport: "stdio"},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"My Server": "my-server", "my-server": "my-server-2"}
	if diff := cmp.Diff(want, res.Names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
}

func TestParseRejectsBadEntries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		f    Format
		data string
		want string
	}{
		{"args not strings", ClaudeDesktop, `{"mcpServers":{"a":{"command":"x","args":[1]}}}`, "mcpServers.a: args: want an array of strings"},
		{"no command", ClaudeDesktop, `{"mcpServers":{"a":{"args":["x"]}}}`, "mcpServers.a: command: required"},
		{"unknown type", VSCode, `{"servers":{"a":{"type":"ws","url":"x"}}}`, `servers.a: type: "ws" is not stdio, http or sse`},
		{"OpenCode command as a string", OpenCode, `{"mcp":{"a":{"type":"local","command":"npx x"}}}`, "mcp.a: command: want an array of strings"},
		{"no MCP key", Cursor, `{"other":{}}`, `no "mcpServers" key`},
		{"duplicate server", ClaudeDesktop, `{"mcpServers":{"a":{"command":"x"},"a":{"command":"y"}}}`, `key "a" appears twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(tt.f, []byte(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestStripJSONCKeepsStrings(t *testing.T) {
	t.Parallel()
	in := `{"a": "// not a comment, /* nor this */", /* c */ "b": [1, 2,], // end
}`
	got := string(stripJSONC([]byte(in)))
	want := "{\"a\": \"// not a comment, /* nor this */\",   \"b\": [1, 2] \n}"
	if got != want {
		t.Errorf("stripJSONC = %q, want %q", got, want)
	}
}

func TestEntryEnv(t *testing.T) {
	t.Parallel()
	vars := []Var{
		{Name: "A", Secret: "s1"},
		{Name: "B", ClientRef: "${input:b}"},
		{Name: "C", Secret: "s3", Unexpanded: true},
		{Name: "D"},
	}
	tests := []struct {
		name    string
		secrets bool
		want    map[string]string
	}{
		{"client references only", false, map[string]string{"B": "${input:b}"}},
		{"with the literal secrets", true, map[string]string{"A": "s1", "B": "${input:b}"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, EntryEnv(vars, tt.secrets)); diff != "" {
				t.Errorf("EntryEnv (-want +got):\n%s", diff)
			}
		})
	}
	if got := EntryEnv([]Var{{Name: "D"}}, true); got != nil {
		t.Errorf("EntryEnv with nothing to pass = %v, want nil", got)
	}
}
