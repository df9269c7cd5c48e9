package main

import (
	"cmp"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"
)

func writeToolsConfig(t *testing.T, extra string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := `servers:
  fs:
    command: ` + quoteYAML(exe) + `
    env: { ` + standInEnv + `: "1" }
    aliases: { echo: say }
` + extra + `
policy:
  default: ask
  deny: ["mcp:fs:delete_file", "mcp:fs:write_file:path=/etc/**"]
  ask: ["mcp:fs:write_file"]
  allow: ["mcp:fs:read_*"]
audit: { sink: none }
`
	path := filepath.Join(dir, "mcpwarden.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func quoteYAML(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestToolsJSONShowsEveryToolAndItsDecision(t *testing.T) {
	t.Parallel()
	path := writeToolsConfig(t, "")
	code, out, errOut := run(t, "tools", "--config", path, "--json")
	if code != 0 {
		t.Fatalf("tools exited %d: %s", code, errOut)
	}
	var got toolsReport
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	want := toolsReport{
		Tools: []toolRow{
			{Server: "fs", Tool: "delete_file", Name: "mcp:fs:delete_file", WireName: "fs__delete_file", Decision: "hidden", Rule: "mcp:fs:delete_file", Gate: "policy"},
			{Server: "fs", Tool: "echo", Name: "mcp:fs:echo", WireName: "say", Decision: "ask", Rule: "default", Gate: "policy"},
			{Server: "fs", Tool: "get.status", Name: "mcp:fs:get.status", WireName: "fs__get_status", Decision: "ask", Rule: "default", Gate: "policy"},
			{Server: "fs", Tool: "read_file", Name: "mcp:fs:read_file", WireName: "fs__read_file", Decision: "allow", Rule: "mcp:fs:read_*", Gate: "policy"},
			{Server: "fs", Tool: "write_file", Name: "mcp:fs:write_file", WireName: "fs__write_file", Decision: "ask", Rule: "mcp:fs:write_file", Gate: "policy"},
		},
		Catalog: []catalogRow{}, // the stand-in offers no resources or prompts
		Failed:  []failedServer{},
	}
	// The stand-in runs sandboxed, as every stdio server does by default.
	if len(got.Sandboxes) != 1 || got.Sandboxes[0].Server != "fs" || !strings.HasPrefix(got.Sandboxes[0].Sandbox, "tier ") {
		t.Errorf("sandboxes = %+v, want fs with its tier", got.Sandboxes)
	}
	got.Sandboxes = nil
	// mcp-go's stdio server speaks both generations: the handshake's is
	// chosen.
	if want := []protocolRow{{Server: "fs", Protocol: mcp.LATEST_LEGACY_PROTOCOL_VERSION}}; !slices.Equal(got.Protocols, want) {
		t.Errorf("protocols = %+v, want %+v", got.Protocols, want)
	}
	got.Protocols = nil
	slices.SortFunc(got.Tools, func(a, b toolRow) int { return cmp.Compare(a.Server+"\x00"+a.Tool, b.Server+"\x00"+b.Tool) })
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("tools --json (-want +got):\n%s", diff)
	}
}

func TestToolsReportsAFailedUpstreamAndExitsOne(t *testing.T) {
	t.Parallel()
	path := writeToolsConfig(t, "  broken:\n    command: "+quoteYAML(filepath.Join(t.TempDir(), "no-such-server"))+"\n")
	code, out, _ := run(t, "tools", "--config", path)
	if code != exitError {
		t.Errorf("tools with a broken upstream exited %d, want %d", code, exitError)
	}
	lines := slices.DeleteFunc(strings.Split(strings.TrimSpace(out), "\n"), func(l string) bool { return strings.HasPrefix(l, "sandbox: ") || strings.HasPrefix(l, "protocol: ") })
	if !strings.HasPrefix(lines[0], "SERVER") || len(lines) != 7 {
		t.Fatalf("want a header, 5 tools and 1 failure:\n%s", out)
	}
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "broken") || !strings.Contains(last, "error") {
		t.Errorf("the failed upstream is not listed with its error: %q", last)
	}
	if !strings.Contains(out, "fs__read_file") || !strings.Contains(out, "allow") {
		t.Errorf("the working upstream's tools are missing:\n%s", out)
	}
}

func TestToolsNeedsAValidConfig(t *testing.T) {
	t.Parallel()
	if code, _, _ := run(t, "tools"); code != exitUsage {
		t.Errorf("tools without --config exited %d, want %d", code, exitUsage)
	}
}
