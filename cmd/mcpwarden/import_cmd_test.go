package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/clientconfig"
	"github.com/mcpwarden/mcpwarden/internal/config"
)

// copySample copies a client config from internal/clientconfig's samples
// into a fresh directory, at rel below it.
func copySample(t *testing.T, sample, rel string) (dir, path string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "internal", "clientconfig", "testdata", "import", sample, rel))
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	path = filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o640); err != nil {
		t.Fatal(err)
	}
	return dir, path
}

func TestImportPrintsTheSnippetAndWritesAConfigThatLoads(t *testing.T) {
	t.Parallel()
	dir, path := copySample(t, "claude-desktop", "claude_desktop_config.json")
	out := filepath.Join(dir, "mcpwarden.yaml")
	code, stdout, stderr := run(t, "import", "--command", "/opt/bin/mcpwarden", "--out", out, path)
	if code != 0 {
		t.Fatalf("import exited %d: %s", code, stderr)
	}
	var snippet struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(stdout), &snippet); err != nil {
		t.Fatalf("stdout is not the JSON snippet: %v\n%s", err, stdout)
	}
	e, ok := snippet.MCPServers["mcpwarden"]
	if len(snippet.MCPServers) != 1 || !ok || e.Command != "/opt/bin/mcpwarden" || strings.Join(e.Args, " ") != "serve --config "+out {
		t.Errorf("snippet = %+v", snippet)
	}
	for _, want := range []string{"reading " + path + " as a claude-desktop config", "GITHUB_PERSONAL_ACCESS_TOKEN", `imported as "brave-search"`} {
		if !strings.Contains(stderr, want) {
			t.Errorf("report lacks %q:\n%s", want, stderr)
		}
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data)+stdout+stderr, "ghp_R4nd0m") {
		t.Error("a literal token was copied")
	}
	env := []string{"GITHUB_PERSONAL_ACCESS_TOKEN=x", "BRAVE_API_KEY=x", "POSTGRES_URL=x"}
	if _, err := config.Load(out, env); err != nil {
		t.Errorf("the written config does not load: %v", err)
	}
	if orig, _ := os.ReadFile(path); !strings.Contains(string(orig), "ghp_R4nd0m") {
		t.Error("without --write the client file was changed")
	}

	// A second import does not overwrite the config.
	if code, _, stderr := run(t, "import", "--out", out, path); code != exitUsage || !strings.Contains(stderr, "--force") {
		t.Errorf("import over an existing --out = %d, %q; want %d and a hint at --force", code, stderr, exitUsage)
	}
}

func TestImportWriteRewritesTheClientAndKeepsABackup(t *testing.T) {
	t.Parallel()
	dir, path := copySample(t, "vscode", ".vscode/mcp.json")
	orig, _ := os.ReadFile(path)
	out := filepath.Join(dir, ".vscode", "mcpwarden.yaml")
	code, _, stderr := run(t, "import", "--from", "vscode", "--command", "mcpwarden", "--out", out, "--write", path)
	if code != 0 {
		t.Fatalf("import --write exited %d: %s", code, stderr)
	}
	backup, err := os.ReadFile(path + ".bak")
	if err != nil || string(backup) != string(orig) {
		t.Fatalf("backup = %v, want the original", err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var client struct {
		Inputs  []map[string]any `json:"inputs"`
		Servers map[string]struct {
			Type string            `json:"type"`
			Args []string          `json:"args"`
			Env  map[string]string `json:"env"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(got, &client); err != nil {
		t.Fatal(err)
	}
	e := client.Servers["mcpwarden"]
	if len(client.Servers) != 1 || e.Type != "stdio" || e.Args[2] != out {
		t.Errorf("rewritten servers = %+v", client.Servers)
	}
	if len(client.Inputs) != 1 || e.Env["GITHUB_TOKEN"] != "${input:github_token}" {
		t.Errorf("the VS Code input is not passed on: inputs %v, env %v", client.Inputs, e.Env)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("the client file's mode changed: %v", fi.Mode())
	}
	cfg, err := config.Load(out, []string{"GITHUB_TOKEN=x"})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Servers["fs"].Args[2]; got != dir {
		t.Errorf("${workspaceFolder} = %q, want the project %q", got, dir)
	}

	// Importing the rewritten file again finds nothing to import.
	code, _, stderr = run(t, "import", "--force", "--out", out, "--write", path)
	if code != exitUsage || !strings.Contains(stderr, "already point at mcpwarden") {
		t.Errorf("second import = %d, %q", code, stderr)
	}
	if _, err := os.Stat(path + ".bak.1"); err == nil {
		t.Error("a failed import made a backup")
	}
}

func TestImportSecretsInClientOnlyWithWrite(t *testing.T) {
	t.Parallel()
	dir, path := copySample(t, "claude-desktop", "claude_desktop_config.json")
	out := filepath.Join(dir, "w.yaml")
	if code, stdout, _ := run(t, "import", "--secrets-in-client", "--out", out, path); code != exitUsage || strings.Contains(stdout, "ghp_") {
		t.Errorf("--secrets-in-client without --write = %d", code)
	}
	code, _, stderr := run(t, "import", "--secrets-in-client", "--write", "--command", "mcpwarden", "--out", out, path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got, _ := os.ReadFile(path)
	var client struct {
		MCPServers map[string]struct {
			Env map[string]string `json:"env"`
		} `json:"mcpServers"`
		GlobalShortcut string `json:"globalShortcut"`
	}
	if err := json.Unmarshal(got, &client); err != nil {
		t.Fatal(err)
	}
	if client.MCPServers["mcpwarden"].Env["GITHUB_PERSONAL_ACCESS_TOKEN"] != "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngOnly00" || client.GlobalShortcut != "Ctrl+Space" {
		t.Errorf("rewritten client = %s", got)
	}
	if cfg, _ := os.ReadFile(out); strings.Contains(string(cfg), "ghp_") {
		t.Error("the token is in the mcpwarden config")
	}
}

func TestImportConvertsClaudeCodePermissions(t *testing.T) {
	t.Parallel()
	dir, path := copySample(t, "claude-code", ".mcp.json")
	_, settings := copySample(t, "claude-code", "settings.json")
	out := filepath.Join(dir, "mcpwarden.yaml")
	code, _, stderr := run(t, "import", "--settings", settings, "--out", out, path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{`skipped: permissions.allow: "Bash(npm run test:*)"`, "already runs mcpwarden"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("report lacks %q:\n%s", want, stderr)
		}
	}
	cfg, err := config.Load(out, []string{"GITHUB_TOKEN=x", "SENTRY_TOKEN=x", "INTERNAL_API_KEY=x"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(cfg.Policy.Deny, " "), "mcp:github:delete_repository") || !strings.Contains(strings.Join(cfg.Policy.Allow, " "), "mcp:sentry:*") {
		t.Errorf("policy = %+v", cfg.Policy)
	}
}

func TestImportUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notMCP := filepath.Join(dir, "x.json")
	if err := os.WriteFile(notMCP, []byte(`{"a":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no file and no format", []string{"import"}, "give the client config FILE"},
		{"an unknown format", []string{"import", "--from", "emacs", notMCP}, `unknown client format "emacs"`},
		{"a file that is not a client config", []string{"import", notMCP}, "no mcpServers, servers or mcp key"},
		{"a missing file", []string{"import", filepath.Join(dir, "missing.json")}, "missing.json does not exist: give the client's config file"},
		{"a client's name given as the file", []string{"import", "claude-code"}, "client config claude-code does not exist: to read claude-code's usual file write mcpwarden import --from claude-code"},
		{"a client's name misspelt as the file", []string{"import", "cursr"}, "write mcpwarden import --from cursor"},
		{"a misspelt client format", []string{"import", "--from", "claude-cod", notMCP}, "did you mean --from claude-code?"},
		{"a non-YAML out", []string{"import", "--out", filepath.Join(dir, "c.json"), notMCP}, "import writes YAML"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, _, stderr := run(t, tt.args...)
			if code != exitUsage || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, %q; want %d and %q", code, stderr, exitUsage, tt.want)
			}
		})
	}
}

func TestImportConfinesTheServersToTheProject(t *testing.T) {
	t.Parallel()
	dir, path := copySample(t, "claude-code", ".mcp.json")
	out := filepath.Join(dir, "mcpwarden.yaml")
	code, _, stderr := run(t, "import", "--command", "mcpwarden", "--out", out, path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if want := "file access is confined to " + dir + " "; !strings.Contains(stderr, want) {
		t.Errorf("report lacks %q:\n%s", want, stderr)
	}
	cfg, err := config.Load(out, []string{"GITHUB_TOKEN=x", "SENTRY_TOKEN=x", "INTERNAL_API_KEY=x"})
	if err != nil {
		t.Fatal(err)
	}
	if gh := cfg.Servers["github"].Policy; len(gh.Workspace) != 1 || gh.Workspace[0] != dir || gh.OutsideWorkspace != "ask" {
		t.Errorf("servers.github.policy = %+v, want workspace [%s], outside_workspace ask", gh, dir)
	}
	if s := cfg.Servers["sentry"].Policy; len(s.Workspace) != 0 {
		t.Errorf("the remote server sentry is confined to %v", s.Workspace)
	}

	// --workspace replaces the project.
	other := t.TempDir()
	code, _, stderr = run(t, "import", "--command", "mcpwarden", "--force", "--workspace", other, "--out", out, path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	cfg, err = config.Load(out, []string{"GITHUB_TOKEN=x", "SENTRY_TOKEN=x", "INTERNAL_API_KEY=x"})
	if err != nil {
		t.Fatal(err)
	}
	if gh := cfg.Servers["github"].Policy; len(gh.Workspace) != 1 || gh.Workspace[0] != other {
		t.Errorf("with --workspace, servers.github.policy.workspace = %v, want [%s]", gh.Workspace, other)
	}
}

// claudeDesktopEntryEnv reads the env of the mcpwarden entry of a Claude
// Desktop config.
func claudeDesktopEntryEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var client struct {
		MCPServers map[string]struct {
			Env map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(got, &client); err != nil {
		t.Fatal(err)
	}
	return client.MCPServers["mcpwarden"].Env
}

// TestImportedClaudeDesktopStartsWithoutTheShellsEnvironment is the third
// finding of issue 19: Claude Desktop started from the Dock does not see the
// shell's environment, so by default import keeps the literal secrets where
// the client passes them on, the env of its mcpwarden entry, and the
// imported config loads with nothing but that env.
func TestImportedClaudeDesktopStartsWithoutTheShellsEnvironment(t *testing.T) {
	t.Parallel()
	dir, path := copySample(t, "claude-desktop", "claude_desktop_config.json")
	out := filepath.Join(dir, "mcpwarden.yaml")
	code, stdout, stderr := run(t, "import", "--command", "mcpwarden", "--out", out, "--write", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	env := claudeDesktopEntryEnv(t, path)
	if env["GITHUB_PERSONAL_ACCESS_TOKEN"] != "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngOnly00" || env["BRAVE_API_KEY"] == "" {
		t.Errorf("entry env = %v, want the literal secrets", env)
	}
	if strings.Contains(stdout+stderr, "ghp_R4nd0m") {
		t.Error("a secret was printed")
	}
	if cfg, _ := os.ReadFile(out); strings.Contains(string(cfg), "ghp_R4nd0m") {
		t.Error("the token is in the mcpwarden config")
	}
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	if _, err := config.Load(out, environ); err != nil {
		t.Errorf("the config does not load with the entry's env alone: %v", err)
	}
}

func TestImportSecretsInEnvKeepsThemOutOfTheClient(t *testing.T) {
	t.Parallel()
	dir, path := copySample(t, "claude-desktop", "claude_desktop_config.json")
	code, _, stderr := run(t, "import", "--command", "mcpwarden", "--secrets-in-env", "--out", filepath.Join(dir, "m.yaml"), "--write", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if env := claudeDesktopEntryEnv(t, path); len(env) != 0 {
		t.Errorf("with --secrets-in-env the entry env = %v, want none", env)
	}
	if !strings.Contains(stderr, "set it in the environment mcpwarden runs in") {
		t.Errorf("report does not say to set the variables:\n%s", stderr)
	}
	if code, _, _ := run(t, "import", "--secrets-in-env", "--secrets-in-client", "--write", "--out", filepath.Join(dir, "n.yaml"), path); code != exitUsage {
		t.Errorf("both secrets flags = exit %d, want %d", code, exitUsage)
	}
}

func TestImportWithoutWriteDoesNotPrintClaudeDesktopSecrets(t *testing.T) {
	t.Parallel()
	dir, path := copySample(t, "claude-desktop", "claude_desktop_config.json")
	code, stdout, stderr := run(t, "import", "--command", "mcpwarden", "--out", filepath.Join(dir, "m.yaml"), path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout+stderr, "ghp_R4nd0m") {
		t.Error("a secret was printed")
	}
	if !strings.Contains(stderr, "add it to the env of the mcpwarden entry") {
		t.Errorf("report does not say where the secrets go:\n%s", stderr)
	}
}

// TestEveryImportedClientStartsWithoutExtraSteps: for each client, the
// config import --write wrote loads with nothing but the env the rewritten
// client passes to mcpwarden (issue 19: "starts without extra steps"),
// and is confined.
func TestEveryImportedClientStartsWithoutExtraSteps(t *testing.T) {
	t.Parallel()
	for _, tt := range roundTripSamples {
		t.Run(tt.sample, func(t *testing.T) {
			t.Parallel()
			dir, path := copySample(t, tt.sample, tt.file)
			// The variables the client config took from the client's own
			// environment are in the environment it starts mcpwarden in.
			orig, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			origSrc, err := clientconfig.Parse(tt.format, orig)
			if err != nil {
				t.Fatal(err)
			}
			before, err := clientconfig.Convert(origSrc, nil)
			if err != nil {
				t.Fatal(err)
			}
			var environ []string
			for _, v := range before.Vars {
				if v.Secret == "" && v.ClientRef == "" {
					environ = append(environ, v.Name+"=from-the-clients-environment")
				}
			}
			out := filepath.Join(dir, "mcpwarden.yaml")
			code, stdout, stderr := run(t, "import", "--from", tt.format.String(), "--command", "mcpwarden", "--out", out, "--write", path)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			src, err := clientconfig.Parse(tt.format, data)
			if err != nil || len(src.Servers) != 1 {
				t.Fatalf("rewritten client: %v, %+v", err, src)
			}
			for k, v := range src.Servers[0].Env {
				environ = append(environ, k+"="+v)
			}
			cfg, err := config.Load(out, environ)
			if err != nil {
				t.Fatalf("the config does not load with the env the client passes (%q): %v", environ, err)
			}
			confined := false
			for _, s := range cfg.Servers {
				confined = confined || len(s.Policy.Workspace) > 0
			}
			if !confined {
				t.Error("no server is confined to a workspace")
			}
			if cfgText, _ := os.ReadFile(out); strings.Contains(string(cfgText)+stdout+stderr, "ghp_R4nd0m") {
				t.Error("a secret went into the mcpwarden config or the output")
			}
		})
	}
}
