package clientconfig

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/rules"
)

func TestImportConfinesEveryLocalServer(t *testing.T) {
	t.Parallel()
	fs := Server{Name: "fs", Command: "npx", Transport: "stdio", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/home/u/a", "~/b"}}
	relFS := Server{Name: "fs", Command: "npx", Transport: "stdio", Args: []string{"-y", "@modelcontextprotocol/server-filesystem@1.0", "docs", "--verbose"}}
	gh := Server{Name: "gh", Command: "npx", Transport: "stdio", Args: []string{"-y", "@modelcontextprotocol/server-github"}}
	remote := Server{Name: "remote", URL: "https://mcp.example/mcp", Transport: "http"}
	tests := []struct {
		name    string
		servers []Server
		opts    Options
		want    map[string][]string // server key -> its workspace (absent: none)
		cwd     map[string]string   // server key -> its cwd, where checked
	}{
		{
			name:    "a filesystem server keeps its own directories and the others get them too",
			servers: []Server{fs, gh, remote},
			opts:    Options{ProjectDir: "/home/u/project", Home: "/home/u"},
			want:    map[string][]string{"fs": {"/home/u/a", "/home/u/b"}, "gh": {"/home/u/a", "/home/u/b"}},
			cwd:     map[string]string{"fs": "/home/u/a"},
		},
		{
			name:    "without a filesystem server the project is the workspace",
			servers: []Server{gh, remote},
			opts:    Options{ProjectDir: "/home/u/project"},
			want:    map[string][]string{"gh": {"/home/u/project"}},
		},
		{
			name:    "a relative directory is the project's",
			servers: []Server{relFS},
			opts:    Options{ProjectDir: "/home/u/project"},
			want:    map[string][]string{"fs": {"/home/u/project/docs"}},
			cwd:     map[string]string{"fs": "/home/u/project/docs"},
		},
		{
			name:    "an explicit workspace wins over everything",
			servers: []Server{fs, gh},
			opts:    Options{ProjectDir: "/home/u/project", Home: "/home/u", Workspace: []string{"/srv/w"}},
			want:    map[string][]string{"fs": {"/srv/w"}, "gh": {"/srv/w"}},
		},
		{
			name:    "a remote server is never confined",
			servers: []Server{remote},
			opts:    Options{ProjectDir: "/home/u/project"},
			want:    map[string][]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := Convert(&Source{Format: ClaudeDesktop, Servers: tt.servers}, &tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse(res.Config, ".yaml", "/etc/mcpwarden", nil)
			if err != nil {
				t.Fatalf("%v\n%s", err, res.Config)
			}
			got := map[string][]string{}
			for name, s := range cfg.Servers {
				if len(s.Policy.Workspace) > 0 {
					got[name] = s.Policy.Workspace
					if s.Policy.OutsideWorkspace != "ask" {
						t.Errorf("servers.%s.policy.outside_workspace = %q, want ask", name, s.Policy.OutsideWorkspace)
					}
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("workspaces (-want +got):\n%s\n%s", diff, res.Config)
			}
			for name, want := range tt.cwd {
				if got := cfg.Servers[name].Cwd; got != want {
					t.Errorf("servers.%s.cwd = %q, want %q", name, got, want)
				}
			}
		})
	}
}

// TestImportedConfigDoesNotAllowEtcPasswd is the hole of issue 19: an
// imported config that allows the filesystem server's reads must not allow
// reading /etc/passwd; mcpwarden itself asks, by the workspace.
func TestImportedConfigDoesNotAllowEtcPasswd(t *testing.T) {
	t.Parallel()
	src := &Source{Format: ClaudeCode, Servers: []Server{{Name: "fs", Command: "npx", Transport: "stdio", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "."}}},
		Permissions: Permissions{Allow: []string{"mcp__fs__read_text_file", "mcp__fs__read_multiple_files"}}}
	res, err := Convert(src, &Options{ProjectDir: "/home/u/project"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(res.Config, ".yaml", "/home/u/project", nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := rules.Compile(cfg.RulesSpecIn("/nonexistent"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		tool     string
		args     map[string]any
		want     rules.Decision
		wantRule string
	}{
		{"an absolute path outside the project", "read_text_file", map[string]any{"path": "/etc/passwd"}, rules.Ask, "outside_workspace"},
		{"a traversal out of the project", "read_text_file", map[string]any{"path": "../../../etc/passwd"}, rules.Ask, "outside_workspace"},
		{"one outside path in a batch", "read_multiple_files", map[string]any{"paths": []any{"README.md", "/etc/passwd"}}, rules.Ask, "outside_workspace"},
		{"a file URI outside the project", "read_text_file", map[string]any{"path": "file:///etc/passwd"}, rules.Ask, "outside_workspace"},
		{"a read in the project", "read_text_file", map[string]any{"path": "README.md"}, rules.Allow, "mcp:fs:read_text_file"},
		{"a secret in the project", "read_text_file", map[string]any{"path": ".env"}, rules.Deny, "mcp:*:*:@path=**/.env"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := p.Decide(rules.Call{Server: "fs", Tool: tt.tool, Arguments: tt.args})
			if v.Decision != tt.want || v.Rule != tt.wantRule {
				t.Errorf("%s %v = %v by %q, want %v by %q", tt.tool, tt.args, v.Decision, v.Rule, tt.want, tt.wantRule)
			}
		})
	}
}

func TestImportWarnsOfAWorkspaceThatConfinesNothing(t *testing.T) {
	t.Parallel()
	src := &Source{Format: ClaudeDesktop, Servers: []Server{{Name: "fs", Command: "npx", Transport: "stdio", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/"}}}}
	res, err := Convert(src, &Options{ProjectDir: "/home/u/project"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "is the whole filesystem") }) {
		t.Errorf("notes = %q, want one saying / confines nothing", res.Notes)
	}
}
