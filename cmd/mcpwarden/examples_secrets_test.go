package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/app"
	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/rules"
)

// fsToolsFile is server-filesystem's tools/list (the version the examples
// pin), as the real server answers it; TestExamplesRefuseSecretsLive in
// internal/e2e checks that it still does.
const fsToolsFile = "testdata/server-filesystem-tools.json"

// An fsTool is the part of a tool definition the secrets test needs.
type fsTool struct {
	Name        string `json:"name"`
	InputSchema struct {
		Properties map[string]any `json:"properties"`
		Required   []string       `json:"required"`
	} `json:"inputSchema"`
}

func loadFSTools(t *testing.T) []fsTool {
	t.Helper()
	data, err := os.ReadFile(fsToolsFile)
	if err != nil {
		t.Fatal(err)
	}
	var tools []fsTool
	if err := json.Unmarshal(data, &tools); err != nil {
		t.Fatalf("%s: %v", fsToolsFile, err)
	}
	return tools
}

// callsReading returns, for each tool of server-filesystem that takes a
// path, the arguments (as JSON, as a client sends them) that make it touch
// p: every path-like argument in turn set to p, others to a harmless value.
func callsReading(tools []fsTool, p string) map[string][]string {
	fsPathKeys := []string{"path", "paths", "source", "destination"} // server-filesystem's
	out := map[string][]string{}
	for _, tool := range tools {
		for _, key := range fsPathKeys {
			if _, ok := tool.InputSchema.Properties[key]; !ok {
				continue
			}
			args := map[string]any{}
			for _, req := range tool.InputSchema.Required {
				args[req] = "x"
			}
			for _, other := range fsPathKeys {
				if _, ok := tool.InputSchema.Properties[other]; ok {
					args[other] = "notes.txt"
				}
			}
			if key == "paths" {
				args[key] = []string{"notes.txt", p}
			} else {
				args[key] = p
			}
			data, _ := json.Marshal(args)
			out[tool.Name] = append(out[tool.Name], string(data))
		}
	}
	return out
}

// An exampleConfig is one mcpwarden config among the examples.
type exampleConfig struct {
	name string // relative to examples/, with "#data" for a ConfigMap's
	cfg  *config.Config
}

// exampleConfigs loads every mcpwarden config under examples/, those
// embedded in Kubernetes ConfigMaps too.
func exampleConfigs(t *testing.T) []exampleConfig {
	t.Helper()
	var out []exampleConfig
	err := filepath.WalkDir(examplesDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (filepath.Ext(path) != ".yaml" && filepath.Ext(path) != ".yml") || strings.HasSuffix(path, ".cases.yaml") {
			return err
		}
		rel, _ := filepath.Rel(examplesDir, path)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if docs := k8sDocs(t, data); docs != nil {
			for _, doc := range docs {
				cm, _ := doc["data"].(map[string]any)
				for name, v := range cm {
					if doc["kind"] != "ConfigMap" || !strings.HasSuffix(name, ".yaml") {
						continue
					}
					cfg, err := config.Parse([]byte(v.(string)), ".yaml", "/etc/mcpwarden", exampleEnv)
					if err != nil {
						t.Fatalf("%s: ConfigMap data %s: %v", rel, name, err)
					}
					out = append(out, exampleConfig{rel + "#" + name, cfg})
				}
			}
			return nil
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return err
		}
		cfg, err := config.Load(abs, exampleEnv)
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		out = append(out, exampleConfig{rel, cfg})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// filesystemServer returns the name of the config's server-filesystem and
// the directory it serves; ok is false when the config has none.
func filesystemServer(cfg *config.Config, workDir string) (name, dir string, ok bool) {
	for _, n := range cfg.ServerNames() {
		s := cfg.Servers[n]
		if !slices.ContainsFunc(s.Args, func(a string) bool { return strings.Contains(a, "server-filesystem") }) {
			continue
		}
		dir = s.Args[len(s.Args)-1]
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(cfg.ServerDir(n, workDir), dir)
		}
		return n, dir, true
	}
	return "", "", false
}

// TestExamplesRefuseSecrets decides, for every config under examples/,
// with the code `mcpwarden check` runs, a call of every server-filesystem
// tool that takes a path (read_file, read_text_file, read_media_file,
// read_multiple_files, get_file_info, list_directory, directory_tree,
// search_files, write_file, edit_file, move_file, ...) on .env, .git/config,
// a .pem and a file outside the workspace: each must be denied. A config
// without a filesystem server is tried as if it had one named fs (whose
// rules are the global ones): secrets are denied there too, and a path
// outside the workspace is at least not allowed. With paths compared
// case-insensitively, as on macOS, .ENV and SERVER.PEM are denied too.
func TestExamplesRefuseSecrets(t *testing.T) {
	t.Parallel()
	tools := loadFSTools(t)
	for _, read := range []string{"read_file", "read_text_file", "read_media_file", "read_multiple_files", "get_file_info", "list_directory", "directory_tree", "search_files", "move_file"} {
		if _, ok := callsReading(tools, ".env")[read]; !ok {
			t.Fatalf("%s has no %s taking a path: is it still server-filesystem's tools/list?", fsToolsFile, read)
		}
	}
	examples := exampleConfigs(t)
	if len(examples) < 10 {
		t.Fatalf("found %d example configs, want every one of examples/", len(examples))
	}
	for _, ex := range examples {
		t.Run(ex.name, func(t *testing.T) {
			t.Parallel()
			j := newExampleJudge(t, ex, tools)
			decide, refuse, server, dir, hasFS := j.decide, j.refuse, j.server, j.dir, j.hasFS
			refuse(".env", []string{".env", "sub/.env", filepath.Join(dir, ".env"), filepath.Join(dir, ".env.production")}, false)
			refuse(".git/config", []string{".git/config", filepath.Join(dir, ".git", "config"), filepath.Join(dir, "vendor", "x", ".git", "config")}, false)
			refuse("a .pem", []string{"certs/server.pem", filepath.Join(dir, "tls", "server.pem")}, false)
			refuse("a file outside the workspace", []string{"/opt/elsewhere/notes.txt", "../outside.txt", filepath.Join(dir, "..", "outside.txt")}, true)

			// The leak the examples had: read_multiple_files takes paths.
			for _, args := range []string{`{"paths":[".env",".git/config"]}`, `{"paths":["README.md","` + filepath.Join(dir, ".env") + `"]}`} {
				if v := decide("read_multiple_files", args); v.Decision != rules.Deny {
					t.Errorf("mcp:%s:read_multiple_files %s = %v by %q, want deny", server, args, v.Decision, v.Rule)
				}
			}
			// On macOS and Windows (paths_case_insensitive: auto folds there)
			// .ENV is .env.
			spec := ex.cfg.RulesSpecIn(ex.cfg.Dir)
			spec.PathsCaseInsensitive = true
			folded, err := rules.Compile(spec)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{".ENV", ".Git/config", filepath.Join(dir, "TLS", "SERVER.PEM")} {
				for tool, calls := range callsReading(tools, p) {
					for _, args := range calls {
						call, err := parseCheckCall([]string{"mcp:" + server + ":" + tool, args}, nil)
						if err != nil {
							t.Fatal(err)
						}
						if v := folded.Explain(call).Verdict; v.Decision != rules.Deny {
							t.Errorf("with paths folded: mcp:%s:%s %s = %v by %q, want deny", server, tool, args, v.Decision, v.Rule)
						}
					}
				}
			}
			// Reading an ordinary file in the workspace is not denied, so
			// the denials above are about what was read.
			if hasFS {
				args := `{"path":"` + filepath.Join(dir, "README.md") + `"}`
				if v := decide("read_text_file", args); v.Decision == rules.Deny {
					t.Errorf("mcp:%s:read_text_file %s = deny by %q, want it allowed or asked", server, args, v.Rule)
				}
			}
		})
	}
}

// An exampleJudge decides calls to one example config's filesystem server
// with the code `mcpwarden check` runs. A config without a filesystem
// server is judged as if it had one named fs (whose rules are the global
// ones).
type exampleJudge struct {
	t      *testing.T
	st     *app.Setup
	tools  []fsTool
	server string // the filesystem server's name
	dir    string // the directory it serves
	hasFS  bool   // the config has one
}

func newExampleJudge(t *testing.T, ex exampleConfig, tools []fsTool) *exampleJudge {
	t.Helper()
	// Clients start mcpwarden in the config's directory (Claude Code in
	// the project, where its mcpwarden.yaml is).
	workDir := ex.cfg.Dir
	st, err := app.NewSetup(ex.cfg, workDir)
	if err != nil {
		t.Fatal(err)
	}
	j := &exampleJudge{t: t, st: st, tools: tools}
	j.server, j.dir, j.hasFS = filesystemServer(ex.cfg, workDir)
	if !j.hasFS {
		j.server, j.dir = "fs", "/home/you/project"
	}
	return j
}

// decide decides the filesystem server's tool with args (JSON).
func (j *exampleJudge) decide(tool, args string) rules.Verdict {
	call, err := parseCheckCall([]string{"mcp:" + j.server + ":" + tool, args}, nil)
	if err != nil {
		j.t.Fatalf("%s %s: %v", tool, args, err)
	}
	return j.st.Policy.Explain(call).Verdict
}

// refuse checks that every path-taking tool is denied each of paths
// (what names them in errors); with outside, a config without a
// filesystem server need only not allow them.
func (j *exampleJudge) refuse(what string, paths []string, outside bool) {
	j.t.Helper()
	for _, p := range paths {
		for tool, calls := range callsReading(j.tools, p) {
			for _, args := range calls {
				v := j.decide(tool, args)
				ok := v.Decision == rules.Deny || (outside && !j.hasFS && v.Decision != rules.Allow)
				if !ok {
					j.t.Errorf("%s: mcp:%s:%s %s = %v by %q, want deny", what, j.server, tool, args, v.Decision, v.Rule)
				}
			}
		}
	}
}

// TestExamplesRefusePGPAndPuTTYKeysAndEnvrc is security round 3's attack
// 5, on the path rules: a PGP private key (.asc, .gpg), a PuTTY key
// (.ppk) and a direnv .envrc (AWS_SECRET_ACCESS_KEY=…) passed every
// example's deny list. (The result scanner is the second line; see
// internal/secrets.)
func TestExamplesRefusePGPAndPuTTYKeysAndEnvrc(t *testing.T) {
	t.Parallel()
	tools := loadFSTools(t)
	for _, ex := range exampleConfigs(t) {
		t.Run(ex.name, func(t *testing.T) {
			t.Parallel()
			j := newExampleJudge(t, ex, tools)
			j.refuse("a PGP private key", []string{"keys/private.asc", filepath.Join(j.dir, "secring.gpg"), filepath.Join(j.dir, "backup", "me.asc")}, false)
			j.refuse("a PuTTY key", []string{"deploy.ppk", filepath.Join(j.dir, "ops", "server.ppk")}, false)
			j.refuse("a direnv .envrc", []string{".envrc", "sub/.envrc", filepath.Join(j.dir, ".envrc")}, false)
		})
	}
}
