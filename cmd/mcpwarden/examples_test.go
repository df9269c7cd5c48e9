package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/mcpwarden/mcpwarden/internal/clientconfig"
	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/rules"
)

const examplesDir = "../../examples"

// exampleEnv holds the variables the examples reference.
var exampleEnv = []string{"GITHUB_TOKEN=test", "CONTEXT7_API_KEY=test", "GITLAB_TOKEN=test"}

// k8sDocs returns the documents of a Kubernetes manifest, or nil if data is
// not one (an mcpwarden config has no apiVersion and kind).
func k8sDocs(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	var docs []map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if doc["apiVersion"] == nil || doc["kind"] == nil {
			return nil
		}
		docs = append(docs, doc)
	}
	return docs
}

// TestExamplesLoadAndParse loads every mcpwarden config under examples/
// (those embedded in Kubernetes ConfigMaps too) and parses every client
// snippet, so that no example can rot.
func TestExamplesLoadAndParse(t *testing.T) {
	t.Parallel()
	var configs, snippets, embedded int
	err := filepath.WalkDir(examplesDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".cases.yaml") { // test's cases, not configs
			return err
		}
		rel, _ := filepath.Rel(examplesDir, path)
		switch filepath.Ext(path) {
		case ".yaml", ".yml":
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if docs := k8sDocs(t, data); docs != nil {
				for _, doc := range docs {
					if doc["kind"] != "ConfigMap" {
						continue
					}
					cm, _ := doc["data"].(map[string]any)
					for name, v := range cm {
						if !strings.HasSuffix(name, ".yaml") {
							continue
						}
						embedded++
						if _, err := config.Parse([]byte(v.(string)), ".yaml", "/etc/mcpwarden", exampleEnv); err != nil {
							t.Errorf("%s: ConfigMap data %s: %v", rel, name, err)
						}
					}
				}
				return nil
			}
			configs++
			if _, err := config.Load(path, exampleEnv); err != nil {
				t.Errorf("%s: %v", rel, err)
			}
		case ".json":
			snippets++
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			var v map[string]any
			if err := json.Unmarshal(data, &v); err != nil {
				t.Errorf("%s: %v", rel, err)
			}
			if !bytes.Contains(data, []byte(`"serve", "--config"`)) && !bytes.Contains(data, []byte(`"serve","--config"`)) {
				t.Errorf("%s does not launch mcpwarden serve --config", rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if configs < 9 || snippets < 5 || embedded < 1 {
		t.Errorf("found %d configs, %d client snippets, %d embedded configs: examples missing?", configs, snippets, embedded)
	}
}

func loadExamplePolicy(t *testing.T, rel string) *rules.Policy {
	t.Helper()
	cfg, err := config.Load(filepath.Join(examplesDir, rel), exampleEnv)
	if err != nil {
		t.Fatal(err)
	}
	p, err := rules.Compile(cfg.RulesSpecIn("/nonexistent"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSandboxExampleKeepsTheModelInTheProject(t *testing.T) {
	t.Parallel()
	p := loadExamplePolicy(t, "policies/filesystem-sandbox.yaml")
	tests := []struct {
		name string
		tool string
		args map[string]any
		want rules.Decision
	}{
		{"a read inside the project is allowed", "read_text_file", map[string]any{"path": "/home/you/project/src/main.go"}, rules.Allow},
		{"a relative read is rooted in the project", "read_text_file", map[string]any{"path": "src/main.go"}, rules.Allow},
		{"a traversal out of the project is denied", "read_text_file", map[string]any{"path": "/home/you/project/../../../etc/passwd"}, rules.Deny},
		{"a relative traversal is denied", "read_text_file", map[string]any{"path": "../.ssh/id_ed25519"}, rules.Deny},
		{"a dotfile is denied", "read_text_file", map[string]any{"path": "/home/you/project/.env"}, rules.Deny},
		{"a file in a dot-directory is denied", "read_text_file", map[string]any{"path": "/home/you/project/.git/config"}, rules.Deny},
		{"a secrets file is denied", "read_text_file", map[string]any{"path": "/home/you/project/config/Secrets.yaml"}, rules.Deny},
		{"a key file is denied", "read_text_file", map[string]any{"path": "/home/you/project/tls/server.pem"}, rules.Deny},
		{"one dotfile in a batch denies the batch", "read_multiple_files", map[string]any{"paths": []any{"/home/you/project/a", "/home/you/project/.ssh/id"}}, rules.Deny},
		{"a write asks", "write_file", map[string]any{"path": "/home/you/project/notes.md"}, rules.Ask},
		{"a write to a dot-directory is denied", "write_file", map[string]any{"path": "/home/you/project/.git/hooks/pre-commit"}, rules.Deny},
		{"a move into a dot-directory is denied", "move_file", map[string]any{"source": "/home/you/project/a", "destination": "/home/you/project/.github/x"}, rules.Deny},
		{"a read without a path is not allowed", "read_text_file", map[string]any{}, rules.Deny},
		{"an unknown tool is denied", "execute_command", map[string]any{}, rules.Deny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := p.Decide(rules.Call{Server: "fs", Tool: tt.tool, Arguments: tt.args})
			if v.Decision != tt.want {
				t.Errorf("%s %v = %v by %q, want %v", tt.tool, tt.args, v.Decision, v.Rule, tt.want)
			}
		})
	}
}

func TestGitHubReadOnlyExampleHidesWrites(t *testing.T) {
	t.Parallel()
	p := loadExamplePolicy(t, "policies/github-readonly.yaml")
	tests := []struct {
		tool   string
		want   rules.Decision
		hidden bool
	}{
		{"get_file_contents", rules.Allow, false},
		{"search_code", rules.Allow, false},
		{"list_issues", rules.Allow, false},
		{"create_issue", rules.Deny, true},
		{"merge_pull_request", rules.Deny, true},
		{"delete_file", rules.Deny, true},
		{"fork_repository", rules.Deny, false}, // by default: listed, refused
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			t.Parallel()
			c := rules.Call{Server: "github", Tool: tt.tool}
			if got := p.Decide(c).Decision; got != tt.want {
				t.Errorf("decision = %v, want %v", got, tt.want)
			}
			if got := p.Hidden(c); got != tt.hidden {
				t.Errorf("hidden = %v, want %v", got, tt.hidden)
			}
		})
	}
}

// TestQuickstartRefusesEtcPasswdItself is the first finding of issue 19:
// the quickstart allowed mcp:fs:read_* with no confinement, so reading
// /etc/passwd was allowed by mcpwarden and refused only by the server.
// mcpwarden must refuse it itself, naming the rule.
func TestQuickstartRefusesEtcPasswdItself(t *testing.T) {
	t.Parallel()
	p := loadExamplePolicy(t, "quickstart.yaml")
	tests := []struct {
		name string
		tool string
		args map[string]any
	}{
		{"an absolute path", "read_text_file", map[string]any{"path": "/etc/passwd"}},
		{"a traversal out of the repository", "read_text_file", map[string]any{"path": "../../../../../../etc/passwd"}},
		{"a file URI", "read_text_file", map[string]any{"path": "file:///etc/passwd"}},
		{"a batch with one outside path", "read_multiple_files", map[string]any{"paths": []any{"README.md", "/etc/passwd"}}},
		{"a listing of /etc", "list_directory", map[string]any{"path": "/etc"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := p.Decide(rules.Call{Server: "fs", Tool: tt.tool, Arguments: tt.args})
			if v.Decision != rules.Deny || v.Rule != "outside_workspace" {
				t.Errorf("%s %v = %v by %q, want deny by outside_workspace", tt.tool, tt.args, v.Decision, v.Rule)
			}
		})
	}
	if v := p.Decide(rules.Call{Server: "fs", Tool: "read_text_file", Arguments: map[string]any{"path": "README.md"}}); v.Decision != rules.Allow {
		t.Errorf("reading README.md = %v by %q, want allow", v.Decision, v.Rule)
	}
}

// TestClientExamplesStartMcpwardenAndSendAsksToTheApprovalsPage reads
// each client's example (a folder of examples/ with the client's file
// next to mcpwarden.yaml): the client's file parses as that client's and
// starts mcpwarden serve --config alone, and the config, which can ask
// where many clients cannot show an ask, sets ask.approvals: local as
// quickstart and import do (issue 37), or its asks would be refused with
// no one to answer them.
func TestClientExamplesStartMcpwardenAndSendAsksToTheApprovalsPage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		dir, file string
		format    clientconfig.Format
	}{
		{"claude-code", ".mcp.json", clientconfig.ClaudeCode},
		{"claude-desktop", "claude_desktop_config.json", clientconfig.ClaudeDesktop},
		{"codex", "config.toml", clientconfig.Codex},
		{"cursor", "mcp.json", clientconfig.Cursor},
		{"gemini", "settings.json", clientconfig.Gemini},
		{"opencode", "opencode.json", clientconfig.OpenCode},
		{"vscode", "mcp.json", clientconfig.VSCode},
	}
	for _, tc := range tests {
		t.Run(tc.dir, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(filepath.Join(examplesDir, tc.dir, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			src, err := clientconfig.Parse(tc.format, data)
			if err != nil {
				t.Fatalf("%s: %v", tc.file, err)
			}
			if len(src.Servers) != 1 || src.Servers[0].Name != "mcpwarden" || !slices.Contains(src.Servers[0].Args, "serve") || !slices.Contains(src.Servers[0].Args, "--config") {
				t.Errorf("%s has servers %+v, want one, mcpwarden, running serve --config", tc.file, src.Servers)
			}
			cfg, err := config.Load(filepath.Join(examplesDir, tc.dir, "mcpwarden.yaml"), exampleEnv)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Ask.Approvals != config.ApprovalsLocal {
				t.Errorf("ask.approvals = %q, want %q", cfg.Ask.Approvals, config.ApprovalsLocal)
			}
		})
	}
	entries, err := os.ReadDir(examplesDir)
	if err != nil {
		t.Fatal(err)
	}
	tested := map[string]bool{}
	for _, tc := range tests {
		tested[tc.dir] = true
	}
	for _, e := range entries {
		snippets, _ := filepath.Glob(filepath.Join(examplesDir, e.Name(), "*.json"))
		if e.IsDir() && len(snippets) > 0 && !tested[e.Name()] {
			t.Errorf("examples/%s holds a client's file but is not in this test", e.Name())
		}
	}
}
