package proxy

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/proxy/scan"
)

// binaryLeak is bytes that are not text — a header and NULs — around the
// credentials, as in a binary file that embeds a key.
var binaryLeak = "\x89BIN\x00\x01\x02" + leakedText + "\x00\xff"

// addBlobLeaks gives vault a prompt, a resource and a tool that carry the
// credentials in blobs and prompt messages.
func addBlobLeaks(vault *testkit.StandIn) {
	blob := base64.StdEncoding.EncodeToString([]byte(binaryLeak))
	vault.MCP().AddResource(mcp.NewResource("file:///creds.bin", "creds.bin"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.BlobResourceContents{URI: "file:///creds.bin", MIMEType: "application/octet-stream", Blob: blob}}, nil
	})
	vault.AddTool(mcp.NewTool("dump_blob"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewEmbeddedResource(mcp.BlobResourceContents{URI: "file:///creds.bin", Blob: blob})}}, nil
	})
	vault.MCP().AddPrompt(mcp.NewPrompt("creds"), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return mcp.NewGetPromptResult("deploy with "+githubPAT, []mcp.PromptMessage{
			mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(leakedText)),
			mcp.NewPromptMessage(mcp.RoleUser, mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: "file:///creds", Text: leakedText})),
			mcp.NewPromptMessage(mcp.RoleUser, mcp.NewEmbeddedResource(mcp.BlobResourceContents{URI: "file:///creds.bin", Blob: blob})),
		}), nil
	})
}

// clientSees is a response line as the client can read it: the line and
// every blob in it decoded.
func clientSees(t *testing.T, line string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(line), &v); err != nil {
		t.Fatalf("response %.200q: %v", line, err)
	}
	var b strings.Builder
	b.WriteString(line)
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, e := range t {
				if s, ok := e.(string); ok && k == "blob" {
					data, _ := base64.StdEncoding.DecodeString(s)
					b.WriteString("\n")
					b.Write(data)
				}
				walk(e)
			}
		case []any:
			for _, e := range t {
				walk(e)
			}
		}
	}
	walk(v)
	return b.String()
}

func TestSecretsInBlobsAndPromptsNeverReachTheClient(t *testing.T) {
	t.Parallel()
	requests := map[string]string{
		"a tool result with an embedded blob":       `"method":"tools/call","params":{"name":"vault__dump_blob","arguments":{}}`,
		"a resource read as a blob":                 `"method":"resources/read","params":{"uri":"file:///creds.bin"}`,
		"a prompt with text, a resource and a blob": `"method":"prompts/get","params":{"name":"vault__creds"}`,
	}
	tests := []struct {
		results string
		want    string // in what the client sees
	}{
		{"redact", scan.Mask},
		{"deny", "withheld the result"},
		{"ask", "withheld the result"}, // no one can be asked
	}
	for _, tt := range tests {
		t.Run("results: "+tt.results, func(t *testing.T) {
			t.Parallel()
			srv, sink := leakEnv(t, tt.results)
			send := rawLines(t, srv)
			id := 0
			for name, req := range requests {
				id++
				seen := clientSees(t, send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,%s}`, id, req)))
				for _, part := range append(leakedParts, "deploy with ghp_") {
					if strings.Contains(seen, part) {
						t.Errorf("%s: the client saw %q", name, part)
					}
				}
				if !strings.Contains(seen, tt.want) {
					t.Errorf("%s: the client saw %.400q, want %q", name, seen, tt.want)
				}
			}
			log := sinkText(sink)
			for _, part := range leakedParts {
				if strings.Contains(log, part) {
					t.Errorf("the audit holds %q", part)
				}
			}
			if n := strings.Count(log, "result credentials: "); n < len(requests) {
				t.Errorf("the audit names what was found in %d results, want %d:\n%s", n, len(requests), log)
			}
		})
	}
}
