package e2e

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

func connectHTTPWithToken(t *testing.T, url, token string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	initialize(t, c)
	return c
}

func toolNames(t *testing.T, c *client.Client) []string {
	t.Helper()
	res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func TestProfilesOverHTTPSeeOnlyTheirTools(t *testing.T) {
	t.Parallel()
	f := standardFixture(t, testkit.FreeAddr(t))
	f.appendConfig(t, `profiles:
  echoer:
    servers: [everything]
    tokens_env: [ECHO_TOKEN]
  files:
    servers: [fs]
    tokens_env: [FILES_TOKEN]
    policy:
      allow: ["mcp:fs:move_file"]   # cannot widen the global deny
`)
	url, _ := startHTTP(t, f, "ECHO_TOKEN=echo-secret", "FILES_TOKEN=files-secret")

	echoer := connectHTTPWithToken(t, url, "echo-secret")
	files := connectHTTPWithToken(t, url, "files-secret")
	echoTools, fileTools := toolNames(t, echoer), toolNames(t, files)
	if !slices.Contains(echoTools, "everything__echo") || slices.ContainsFunc(echoTools, func(n string) bool { return strings.HasPrefix(n, "fs__") }) {
		t.Errorf("echoer sees %v, want everything's tools only", echoTools)
	}
	if !slices.Contains(fileTools, "fs__read_text_file") || slices.Contains(fileTools, "everything__echo") || slices.Contains(fileTools, "fs__move_file") {
		t.Errorf("files sees %v, want fs tools without the globally denied move_file", fileTools)
	}

	// A guessed wire name of the other profile's tool is refused and audited.
	_, err := echoer.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "fs__list_allowed_directories"}})
	if err == nil {
		t.Error("the echoer called an fs tool by guessing its name")
	}
	if res := callTool(t, echoer, "everything__echo", map[string]any{"message": "hi"}); res.IsError {
		t.Errorf("echoer echo refused: %s", testkit.Text(res))
	}
	var sawRefusal bool
	for _, e := range readAudit(t, f.auditPath, "decision") {
		if e.Tool == "mcp:fs:list_allowed_directories" && e.Decision == "deny" && e.Profile == "echoer" {
			sawRefusal = true
		}
	}
	if !sawRefusal {
		t.Error("the refused guess is not in the audit log")
	}

	for _, token := range []string{"", "wrong"} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("token %q: status %d, want 401", token, resp.StatusCode)
		}
	}
}
