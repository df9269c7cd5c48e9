package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// standInPaths, as the value of standInEnv, makes the test binary serve
// newPathsStandIn instead of newStandIn.
const standInPaths = "paths"

// newPathsStandIn is a server whose tools take paths under several keys,
// as real ones do: read_multiple_files takes `paths`, render a `snapshotDir`.
func newPathsStandIn() *mcpserver.MCPServer {
	s := mcpserver.NewMCPServer("paths-stand-in", "1.0", mcpserver.WithToolCapabilities(false))
	ok := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	}
	s.AddTool(mcp.NewTool("read_text_file", mcp.WithString("path", mcp.Required())), ok)
	s.AddTool(mcp.NewTool("read_multiple_files", mcp.WithArray("paths", mcp.Required(), mcp.WithStringItems())), ok)
	s.AddTool(mcp.NewTool("render", mcp.WithString("template", mcp.Required()), mcp.WithString("snapshotDir", mcp.Required()),
		mcp.WithArray("include_files", mcp.WithStringItems()), mcp.WithString("profile")), ok)
	return s
}

// writeValidateConfig writes a config fronting newPathsStandIn as fs with
// the policy given (YAML under policy:).
func writeValidateConfig(t *testing.T, policy string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := "servers:\n  fs:\n    command: " + quoteYAML(exe) + "\n    env: { " + standInEnv + ": " + standInPaths + " }\n" +
		"policy:\n" + policy + "\naudit: { sink: none }\n"
	path := filepath.Join(t.TempDir(), "mcpwarden.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestValidateWarnsOfADenyThatMissesAToolsPaths(t *testing.T) {
	t.Parallel()
	path := writeValidateConfig(t, `  deny: ["mcp:fs:*:path=**/.env"]
  allow: ["mcp:fs:read_*", "mcp:fs:render"]`)
	code, out, errOut := run(t, "validate", "--config", path)
	if code != 0 {
		t.Fatalf("validate exited %d: %s%s", code, out, errOut)
	}
	want := `warning: policy.deny[0]: "mcp:fs:*:path=**/.env" conditions on "path", but mcp:fs:read_multiple_files takes "paths": the rule never sees those paths; use @path`
	if !strings.Contains(out, want) {
		t.Errorf("validate output lacks\n%s\ngot:\n%s", want, out)
	}
	if code, out, _ := run(t, "validate", "--config", path, "--strict"); code != exitError {
		t.Errorf("validate --strict with a finding exited %d, want %d:\n%s", code, exitError, out)
	}
}

func TestValidateWarnsOfPathArgumentsNotInPathKeys(t *testing.T) {
	t.Parallel()
	path := writeValidateConfig(t, `  allow: ["mcp:fs:*"]`)
	code, out, errOut := run(t, "validate", "--config", path)
	if code != 0 {
		t.Fatalf("validate exited %d: %s%s", code, out, errOut)
	}
	for _, want := range []string{
		`warning: mcp:fs:render takes "snapshotDir", named like a path, but it is not in path_keys`,
		`warning: mcp:fs:render takes "include_files", named like a path, but it is not in path_keys`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("validate output lacks\n%s\ngot:\n%s", want, out)
		}
	}
	for _, not := range []string{`"profile"`, `"template"`, `takes "path"`, `takes "paths"`} {
		if strings.Contains(out, not) {
			t.Errorf("validate warns of %s, which is not a path or is in path_keys:\n%s", not, out)
		}
	}
	if !strings.Contains(out, "2 lint findings") {
		t.Errorf("validate does not count the 2 findings:\n%s", out)
	}

	// Listing them in path_keys silences the warning.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, "path_keys: [path, paths, snapshotDir, include_files]\n"...)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, out, _ := run(t, "validate", "--config", path); !strings.Contains(out, "0 lint findings") {
		t.Errorf("with the keys in path_keys, validate still warns:\n%s", out)
	}
}

func TestValidateWarnsOfAServerReadingRelativePathsElsewhere(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	served := t.TempDir()
	write := func(cwd string) string {
		cfg := "servers:\n  fs:\n    command: " + quoteYAML(exe) + "\n    args: [" + quoteYAML(served) + "]\n" + cwd +
			"    env: { " + standInEnv + ": " + standInPaths + " }\npolicy:\n  allow: [\"mcp:fs:*\"]\n  deny: [\"mcp:fs:*:@path=" + served + "/private/**\"]\naudit: { sink: none }\n"
		path := filepath.Join(t.TempDir(), "mcpwarden.yaml")
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	_, out, errOut := run(t, "validate", "--config", write(""))
	want := "warning: servers.fs: has no cwd, so the rules join relative paths to "
	if !strings.Contains(out, want) || !strings.Contains(out, "set cwd: "+quoteYAML(served)) {
		t.Errorf("validate output lacks the cwd warning for %s:\n%s%s", served, out, errOut)
	}
	if _, out, _ := run(t, "validate", "--config", write("    cwd: "+quoteYAML(served)+"\n")); strings.Contains(out, "has no cwd") {
		t.Errorf("with cwd set to the served directory validate still warns:\n%s", out)
	}
}
