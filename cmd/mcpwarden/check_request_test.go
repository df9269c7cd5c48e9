package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// standInCatalog, as the stand-in's environment value, adds a resource, a
// template and a prompt to it.
const standInCatalog = "catalog"

func addStandInCatalog(s *mcpserver.MCPServer) {
	mcpserver.WithResourceCapabilities(false, false)(s)
	mcpserver.WithPromptCapabilities(false)(s)
	s.AddResource(mcp.NewResource("file:///srv/app/.env", "env"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return nil, nil
	})
	s.AddResource(mcp.NewResource("file:///srv/app/README.md", "readme"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return nil, nil
	})
	s.AddResourceTemplate(mcp.NewResourceTemplate("file:///{+path}", "file"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return nil, nil
	})
	s.AddPrompt(mcp.NewPrompt("review"), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return nil, nil
	})
}

const requestKindsConfig = `servers:
  fs:
    command: %EXE%
    env: { %ENV%: "catalog" }
  other:
    command: %EXE%
    env: { %ENV%: "catalog" }
profiles:
  ci:
    servers: [fs]
policy:
  default: ask
  deny: ["mcp:fs:resources/read:uri=file:///srv/app/.env"]
  allow: ["mcp:fs:resources/read", "mcp:*:prompts/get"]
audit: { sink: none }
`

func writeRequestKindsConfig(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.NewReplacer("%EXE%", quoteYAML(exe), "%ENV%", standInEnv).Replace(requestKindsConfig)
	path := filepath.Join(t.TempDir(), "mcpwarden.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCheckDecidesEveryRequestKind(t *testing.T) {
	t.Parallel()
	path := writeRequestKindsConfig(t)
	tests := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"a denied resource read", []string{"mcp:fs:resources/read", `{"uri":"file:///srv/app/.env"}`}, exitDeny, "DENY  mcp:fs:resources/read"},
		{"an allowed resource read", []string{"mcp:fs:resources/read", `{"uri":"file:///srv/app/main.go"}`}, 0, "ALLOW  mcp:fs:resources/read"},
		{"a prompt", []string{"mcp:other:prompts/get", `{"name":"review"}`}, 0, "ALLOW  mcp:other:prompts/get"},
		{"a completion falls to the default", []string{"mcp:fs:completion/complete"}, exitAsk, "ASK  mcp:fs:completion/complete"},
		{"the profile cannot see another server", []string{"mcp:other:prompts/get", `{"name":"review"}`, "--profile", "ci"}, exitDeny, "profile:    ci"},
		{"the profile sees its own", []string{"mcp:fs:resources/read", `{"uri":"file:///srv/app/main.go"}`, "--profile", "ci"}, 0, "ALLOW"},
		{"an unknown profile is bad input", []string{"mcp:fs:resources/read", "--profile", "nope"}, exitUsage, ""},
		{"a made-up method is bad input", []string{"mcp:fs:resources/frobnicate"}, exitUsage, ""},
	}
	for _, tt := range tests {
		code, out, errOut := run(t, append([]string{"check", "--config", path}, tt.args...)...)
		if code != tt.code || !strings.Contains(out, tt.out) {
			t.Errorf("%s: check %v exited %d with\n%s%s\nwant %d and %q", tt.name, tt.args, code, out, errOut, tt.code, tt.out)
		}
	}
}

func TestToolsShowsResourcesTemplatesAndPrompts(t *testing.T) {
	t.Parallel()
	path := writeRequestKindsConfig(t)
	code, out, errOut := run(t, "tools", "--config", path, "--json")
	if code != 0 {
		t.Fatalf("tools exited %d: %s", code, errOut)
	}
	var got toolsReport
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	want := map[string]string{
		"fs resource file:///srv/app/.env":         "deny",
		"fs resource file:///srv/app/README.md":    "allow",
		"fs template file:///{+path}":              "allow",
		"fs prompt review":                         "allow",
		"other resource file:///srv/app/.env":      "ask",
		"other resource file:///srv/app/README.md": "ask",
		"other template file:///{+path}":           "ask",
		"other prompt review":                      "allow",
	}
	seen := map[string]string{}
	for _, r := range got.Catalog {
		seen[r.Server+" "+r.Kind+" "+r.Name] = r.Decision
	}
	for k, d := range want {
		if seen[k] != d {
			t.Errorf("%s: decision %q, want %q", k, seen[k], d)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("catalog has %d rows, want %d: %v", len(seen), len(want), seen)
	}
	code, table, _ := run(t, "tools", "--config", path)
	if code != 0 || !strings.Contains(table, "mcp:fs:resources/read") || !strings.Contains(table, "KIND") {
		t.Errorf("tools table lacks the catalog:\n%s", table)
	}
}

// TestValidateKnowsRequestKinds: a rule naming a request kind is not
// reported as matching no tool.
func TestValidateKnowsRequestKinds(t *testing.T) {
	t.Parallel()
	path := writeRequestKindsConfig(t)
	code, out, errOut := run(t, "validate", "--config", path)
	if code != 0 {
		t.Fatalf("validate exited %d: %s%s", code, out, errOut)
	}
	if strings.Contains(out, "resources/read") || strings.Contains(out, "prompts/get") {
		t.Errorf("validate warns about request-kind rules:\n%s", out)
	}
}
