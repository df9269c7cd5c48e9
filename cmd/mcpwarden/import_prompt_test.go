package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// claudeAllow reads permissions.allow of a Claude Code settings file.
func claudeAllow(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Permissions struct {
			Allow []string `json:"allow"`
		} `json:"permissions"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	return s.Permissions.Allow
}

// TestImportAsksEachClaudeCodeCallOnce is the double prompt of issue 19:
// Claude Code asked before a call and mcpwarden asked again. By default
// import lets mcpwarden's tools through Claude Code's prompt and says so.
func TestImportAsksEachClaudeCodeCallOnce(t *testing.T) {
	t.Parallel()
	dir, path := copySample(t, "claude-code", ".mcp.json")
	out := filepath.Join(dir, "mcpwarden.yaml")
	code, _, stderr := run(t, "import", "--command", "mcpwarden", "--out", out, "--write", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	local := filepath.Join(dir, ".claude", "settings.local.json")
	if got := claudeAllow(t, local); !slices.Equal(got, []string{"mcp__mcpwarden"}) {
		t.Errorf("permissions.allow of %s = %q, want [mcp__mcpwarden]", local, got)
	}
	for _, want := range []string{"one prompt per call", "mcpwarden decides every call and asks you itself", "--client-prompt keep"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("report lacks %q:\n%s", want, stderr)
		}
	}
}

func TestImportLetsMcpwardenThroughTheNamedSettings(t *testing.T) {
	t.Parallel()
	dir, path := copySample(t, "claude-code", ".mcp.json")
	_, settings := copySample(t, "claude-code", "settings.json")
	orig, _ := os.ReadFile(settings)
	out := filepath.Join(dir, "mcpwarden.yaml")
	code, _, stderr := run(t, "import", "--command", "mcpwarden", "--settings", settings, "--out", out, "--write", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := claudeAllow(t, settings)
	if !slices.Contains(got, "mcp__mcpwarden") || !slices.Contains(got, "Bash(npm run test:*)") {
		t.Errorf("permissions.allow = %q, want the old entries and mcp__mcpwarden", got)
	}
	if backup, err := os.ReadFile(settings + ".bak"); err != nil || string(backup) != string(orig) {
		t.Errorf("the settings backup = %v, want the original", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".claude", "settings.local.json")); err == nil {
		t.Error("settings.local.json was written though --settings named the file")
	}
}

func TestImportClientPromptKeepLeavesClaudeCodeAlone(t *testing.T) {
	t.Parallel()
	dir, path := copySample(t, "claude-code", ".mcp.json")
	out := filepath.Join(dir, "mcpwarden.yaml")
	code, _, stderr := run(t, "import", "--command", "mcpwarden", "--client-prompt", "keep", "--out", out, "--write", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, ".claude")); err == nil {
		t.Error("--client-prompt keep wrote Claude Code settings")
	}
	if !strings.Contains(stderr, "may be asked twice") {
		t.Errorf("report does not say a call may be asked twice:\n%s", stderr)
	}
}

func TestImportLetsMcpwardenThroughOpenCodesPrompt(t *testing.T) {
	t.Parallel()
	dir, path := copySample(t, "opencode", "opencode.json")
	data, _ := os.ReadFile(path)
	data = []byte(strings.Replace(string(data), `"theme": "opencode",`, `"theme": "opencode", "permission": {"*": "ask"},`, 1))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run(t, "import", "--command", "mcpwarden", "--out", filepath.Join(dir, "mcpwarden.yaml"), "--write", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got, _ := os.ReadFile(path)
	var client struct {
		Permission map[string]string `json:"permission"`
	}
	if err := json.Unmarshal(got, &client); err != nil {
		t.Fatal(err)
	}
	if client.Permission["*"] != "ask" || client.Permission["mcpwarden_*"] != "allow" {
		t.Errorf("permission = %v, want the catch-all ask kept and mcpwarden_* allowed", client.Permission)
	}
	if !strings.Contains(stderr, "one prompt per call") {
		t.Errorf("report lacks the one-prompt line:\n%s", stderr)
	}
}

func TestImportSaysHowToSkipThePromptOfOtherClients(t *testing.T) {
	t.Parallel()
	tests := []struct{ sample, file, want string }{
		{"claude-desktop", "claude_desktop_config.json", `"Allow always"`},
		{"cursor", ".cursor/mcp.json", `"mcpwarden:*"`},
		{"vscode", ".vscode/mcp.json", "always allow the tools of the mcpwarden server"},
	}
	for _, tt := range tests {
		t.Run(tt.sample, func(t *testing.T) {
			t.Parallel()
			dir, path := copySample(t, tt.sample, tt.file)
			code, _, stderr := run(t, "import", "--command", "mcpwarden", "--out", filepath.Join(dir, "m.yaml"), path)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if !strings.Contains(stderr, "one prompt per call") || !strings.Contains(stderr, tt.want) {
				t.Errorf("report lacks the advice %q:\n%s", tt.want, stderr)
			}
		})
	}
}

func TestImportSaysWhenClaudeCodeStillAsks(t *testing.T) {
	t.Parallel()
	dir, path := copySample(t, "claude-code", ".mcp.json")
	settings := filepath.Join(dir, "settings.json")
	if err := os.WriteFile(settings, []byte(`{"permissions": {"ask": ["mcp__mcpwarden__fs__write_file"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run(t, "import", "--command", "mcpwarden", "--settings", settings, "--out", filepath.Join(dir, "m.yaml"), "--write", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, `holds "mcp__mcpwarden__fs__write_file", which Claude Code still asks for`) {
		t.Errorf("report does not say Claude Code still asks:\n%s", stderr)
	}
}
