package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	yaml "go.yaml.in/yaml/v3"
)

// filesystemIndex is the pinned server-filesystem's entry point.
func filesystemIndex() string {
	return filepath.Join(npmMods, "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
}

// exampleProject is a project directory holding the secrets the examples
// must keep from the model, and a file outside it.
type exampleProject struct {
	dir     string // the project
	outside string // a file outside it
	secrets map[string]string
}

// secretMarkers are in the content of every secret file, and must never be
// in a result.
var secretMarkers = []string{"ENV-SECRET", "GIT-SECRET", "PEM-SECRET", "OUTSIDE-SECRET"}

func newExampleProject(t *testing.T) exampleProject {
	t.Helper()
	tmp := t.TempDir()
	p := exampleProject{dir: filepath.Join(tmp, "project"), outside: filepath.Join(tmp, "outside.txt"), secrets: map[string]string{
		".env":             "API_KEY=ENV-SECRET\n",
		".env.production":  "API_KEY=ENV-SECRET-PROD\n",
		".git/config":      "[remote]\n\turl = https://GIT-SECRET@example.com/x\n",
		"certs/server.pem": "-----BEGIN PRIVATE KEY-----\nPEM-SECRET\n",
	}}
	for rel, content := range p.secrets {
		path := filepath.Join(p.dir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, path, content)
	}
	writeFile(t, filepath.Join(p.dir, "README.md"), "a readme\n")
	writeFile(t, p.outside, "OUTSIDE-SECRET\n")
	// Innocent names that are links to the secrets: decided as written they
	// are ordinary files in the project; the server reads the targets.
	for link, target := range map[string]string{"notes.txt": ".env", "gitdir": ".git", "cert.txt": "certs/server.pem"} {
		if err := os.Symlink(filepath.Join(p.dir, target), filepath.Join(p.dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// liveExample writes the example config rel into the project, placed where
// its relative paths mean the project (at place, relative to the project),
// with /home/you/project replaced by the project, every server but its
// filesystem server dropped, that one started with the pinned
// server-filesystem on the project, listen on stdio and the audit log in
// the test's directory.
func liveExample(t *testing.T, rel, place string, p exampleProject) *fixture {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "examples", rel))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(data), "/home/you/project", p.dir)
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
		t.Fatal(err)
	}
	servers, _ := cfg["servers"].(map[string]any)
	for name, v := range servers {
		srv, _ := v.(map[string]any)
		args, _ := srv["args"].([]any)
		if !slices.ContainsFunc(args, func(a any) bool { s, _ := a.(string); return strings.Contains(s, "server-filesystem") }) {
			delete(servers, name)
			continue
		}
		srv["command"] = "node"
		srv["args"] = []any{filesystemIndex(), p.dir}
		srv["cwd"] = p.dir
	}
	if len(servers) != 1 {
		t.Fatalf("%s has %d filesystem servers, want 1", rel, len(servers))
	}
	dir := t.TempDir()
	f := &fixture{dir: dir, sandbox: p.dir, auditPath: filepath.Join(dir, "audit.jsonl")}
	cfg["listen"] = "stdio"
	// The examples' approvals page (ask.approvals: local) would hold each
	// ask for ask.timeout: here an ask is refused at once, as the tests of
	// the policy expect (the page has tests of its own).
	if ask, ok := cfg["ask"].(map[string]any); ok {
		ask["approvals"] = "off"
	}
	cfg["audit"] = map[string]any{"path": f.auditPath, "required": true}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.config = filepath.Join(p.dir, place)
	if err := os.MkdirAll(filepath.Dir(f.config), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.config, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// upstreamTools lists the tools of the pinned server-filesystem itself.
func upstreamTools(t *testing.T, dir string) []mcp.Tool {
	t.Helper()
	c, err := client.NewStdioMCPClient("node", nil, filesystemIndex(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION, ClientInfo: mcp.Implementation{Name: "e2e-test", Version: "1.0"},
	}}); err != nil {
		t.Fatal(err)
	}
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Tools
}

// pathKeysOf are the keys under which a server-filesystem tool takes paths.
func pathKeysOf(tool mcp.Tool) []string {
	var keys []string
	for _, k := range []string{"path", "paths", "source", "destination"} {
		if _, ok := tool.InputSchema.Properties[k]; ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// liveExamples are the examples run live with the real server-filesystem:
// each config (rel, under examples/) and where it sits in the project
// (place), so that its relative paths mean the project.
var liveExamples = []struct{ rel, place string }{
	{"quickstart.yaml", "examples/quickstart.yaml"},
	{"claude-code/mcpwarden.yaml", "mcpwarden.yaml"},
	{"cursor/mcpwarden.yaml", ".cursor/mcpwarden.yaml"},
	{"policies/filesystem-sandbox.yaml", "mcpwarden.yaml"},
}

// TestExamplesRefuseSecretsLive runs example configs with the real
// server-filesystem on a project holding secrets, and calls every tool of
// the server that takes a path, under every path-like key, on .env,
// .env.production, .git/config, a .pem (relative and absolute), links in
// the project to them, a file outside the project, and the exact leak the
// examples had:
// read_multiple_files {"paths": [".env", ".git/config"]}. mcpwarden must
// deny every call itself (the audit log says so) and no secret may come back.
func TestExamplesRefuseSecretsLive(t *testing.T) {
	t.Parallel()
	examples := liveExamples
	tools := upstreamTools(t, t.TempDir())
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	// The list the offline test (cmd/mcpwarden) works from is this one.
	data, err := os.ReadFile(filepath.Join(repoRoot, "cmd", "mcpwarden", "testdata", "server-filesystem-tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	var golden []struct{ Name string }
	if err := json.Unmarshal(data, &golden); err != nil {
		t.Fatal(err)
	}
	var goldenNames []string
	for _, g := range golden {
		goldenNames = append(goldenNames, g.Name)
	}
	if !slices.Equal(names, goldenNames) {
		t.Errorf("server-filesystem's tools are %q; cmd/mcpwarden/testdata/server-filesystem-tools.json has %q: update it", names, goldenNames)
	}
	for _, ex := range examples {
		t.Run(ex.rel, func(t *testing.T) {
			t.Parallel()
			p := newExampleProject(t)
			f := liveExample(t, ex.rel, ex.place, p)
			c := connectStdio(t, f)
			var targets []string
			for rel := range p.secrets {
				targets = append(targets, rel, filepath.Join(p.dir, rel))
			}
			targets = append(targets, p.outside, "../outside.txt", "notes.txt", "gitdir/config", filepath.Join(p.dir, "cert.txt"))
			slices.Sort(targets)
			var calls int
			try := func(tool string, args map[string]any) {
				t.Helper()
				calls++
				text, refused := tryTool(t, c, "fs__"+tool, args)
				if !refused {
					t.Errorf("fs__%s %v was not refused: %q", tool, args, clip(text))
				}
				for _, m := range secretMarkers {
					if strings.Contains(text, m) {
						t.Errorf("fs__%s %v leaked %s: %q", tool, args, m, clip(text))
					}
				}
			}
			for _, tool := range tools {
				for _, key := range pathKeysOf(tool) {
					for _, target := range targets {
						args := map[string]any{}
						for _, req := range tool.InputSchema.Required {
							args[req] = "x"
						}
						for _, k := range pathKeysOf(tool) {
							args[k] = "README.md"
						}
						args[key] = target
						if key == "paths" {
							args[key] = []any{"README.md", target}
						}
						if tool.Name == "edit_file" {
							args["edits"] = []any{map[string]any{"oldText": "API_KEY", "newText": "X"}}
						}
						try(tool.Name, args)
					}
				}
			}
			try("read_multiple_files", map[string]any{"paths": []any{".env", ".git/config"}})

			// mcpwarden refused each call itself: none reached the server.
			decisions := readAudit(t, f.auditPath, "decision")
			if len(decisions) != calls {
				t.Fatalf("audit has %d decisions for %d calls", len(decisions), calls)
			}
			for _, d := range decisions {
				if d.Decision != "deny" {
					t.Errorf("%s %v was decided %s by %q, want deny", d.Tool, d.Arguments, d.Decision, d.Rule)
				}
			}
			for rel, content := range p.secrets {
				if !fileHas(filepath.Join(p.dir, rel), content) {
					t.Errorf("%s was changed or moved", rel)
				}
			}
			// An ordinary read in the project goes through, so the refusals
			// are about what was read.
			if text, refused := tryTool(t, c, "fs__read_text_file", map[string]any{"path": filepath.Join(p.dir, "README.md")}); refused || text != "a readme\n" {
				t.Errorf("reading README.md = %q (refused %v), want it", clip(text), refused)
			}
			t.Logf("%d calls refused", calls)
		})
	}
}
