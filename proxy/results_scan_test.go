package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/proxy/scan"
	"github.com/mcpwarden/mcpwarden/proxy/wire"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// The credentials a leaking upstream returns. They are made up, in the
// formats the detector knows; leakedParts are pieces of them that must
// never reach the client.
const (
	awsKey     = "AKIAIOSFODNN7EXAMPLE"
	githubPAT  = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	pemKey     = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAzLeakedKeyBody\n-----END RSA PRIVATE KEY-----"
	leakedText = "config dump: aws_access_key_id=" + awsKey + " token " + githubPAT + "\n" + pemKey + "\nend"
)

var leakedParts = []string{awsKey, githubPAT, "MIIEpAIBAAKCAQEAzLeakedKeyBody"}

// leakEnv is a proxy in front of a stand-in upstream "vault" whose tools
// return credentials: in text, in structured content, in an embedded
// resource, and in a result large enough to be streamed.
func leakEnv(t *testing.T, results string) (*Server, *memorySink) {
	t.Helper()
	return leakEnvWith(t, results, Options{})
}

// leakEnvWith is leakEnv with opts, whose upstream, policy and audit it
// sets.
func leakEnvWith(t *testing.T, results string, opts Options) (*Server, *memorySink) {
	t.Helper()
	vault := testkit.NewStandIn(server.WithResourceCapabilities(false, false), server.WithPromptCapabilities(false))
	addBlobLeaks(vault)
	vault.MCP().AddResource(mcp.NewResource("file:///creds", "creds"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: "file:///creds", Text: leakedText}}, nil
	})
	vault.AddTool(mcp.NewTool("dump"), testkit.Reply(leakedText))
	vault.AddTool(mcp.NewTool("dump_structured"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultStructured(map[string]any{"creds": map[string]any{"aws": awsKey, "gh": githubPAT, "key": pemKey}}, "see structured content"), nil
	})
	vault.AddTool(mcp.NewTool("dump_resource"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: "file:///creds", Text: leakedText})}}, nil
	})
	vault.AddTool(mcp.NewTool("dump_error"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New(leakedText) // the credentials come back in an error
	})
	vault.AddTool(mcp.NewTool("dump_big"), testkit.Reply(strings.Repeat("padding ", wire.LiftMin/4)+leakedText))
	pool := upstream.Start(t.Context(), map[string]upstream.Spec{
		"vault": {Transport: upstream.TransportHTTP, URL: vault.URL(t)},
	}, nil)
	t.Cleanup(func() { pool.Close() })
	if err := pool.Err("vault"); err != nil {
		t.Fatal(err)
	}
	p, err := rules.Compile(rules.Spec{
		Global:  rules.PolicySpec{Allow: []string{"mcp:vault:*"}},
		Servers: map[string]rules.ServerSpec{"vault": {}},
		Results: results,
	})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memorySink{}
	opts.Upstream, opts.Policy, opts.Audit = pool, p, audit.New(sink, audit.Config{})
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	adopt(t, srv)
	return srv, sink
}

// rawLines drives the proxy over stdio and returns each response line as
// the client receives it, bytes and all.
func rawLines(t *testing.T, srv *Server) (send func(line string) string) {
	t.Helper()
	inW, outR := stdioPipes(t, srv)
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 16<<20)
	send = func(line string) string {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(line, `"id"`) {
			return ""
		}
		if !lines.Scan() {
			t.Fatalf("no response to %s", line)
		}
		return lines.Text()
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return send
}

func TestUpstreamErrorCarryingSecretsIsRedacted(t *testing.T) {
	t.Parallel()
	srv, _ := leakEnv(t, "deny")
	send := rawLines(t, srv)
	got := send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"vault__dump_error","arguments":{}}}`)
	for _, part := range leakedParts {
		if strings.Contains(got, part) {
			t.Errorf("the client received %q in %.300s", part, got)
		}
	}
	if !strings.Contains(got, scan.Mask) {
		t.Errorf("got %.300s, want the error redacted", got)
	}
}

func TestResultWithCloudAndVCSSecretsIsRedacted(t *testing.T) {
	t.Parallel()
	tools := []string{"dump", "dump_structured", "dump_resource", "dump_big"}
	tests := []struct {
		name     string
		results  string
		want     string // in the response the client gets
		withheld bool
	}{
		{"results unset redacts by default", "", scan.Mask, false},
		{"results: redact redacts", "redact", scan.Mask, false},
		{"results: deny withholds the result", "deny", "withheld the result", true},
		{"results: ask withholds the result when no one can be asked", "ask", "withheld the result", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, sink := leakEnv(t, tt.results)
			send := rawLines(t, srv)
			for i, tool := range tools {
				got := send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"vault__%s","arguments":{}}}`, i+1, tool))
				for _, part := range leakedParts {
					if strings.Contains(got, part) {
						t.Errorf("%s: the client received %q", tool, part)
					}
				}
				if !strings.Contains(got, tt.want) {
					t.Errorf("%s: got %.300s, want %q", tool, got, tt.want)
				}
				if tt.withheld != strings.Contains(got, `"isError":true`) {
					t.Errorf("%s: got %.300s, want isError %v", tool, got, tt.withheld)
				}
			}
			got := send(`{"jsonrpc":"2.0","id":99,"method":"resources/read","params":{"uri":"file:///creds"}}`)
			for _, part := range leakedParts {
				if strings.Contains(got, part) {
					t.Errorf("resources/read: the client received %q", part)
				}
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("resources/read: got %.300s, want %q", got, tt.want)
			}
			log := sinkText(sink)
			for _, kind := range []string{"private_key", "token"} {
				if !strings.Contains(log, kind) {
					t.Errorf("the audit does not name the kind %s:\n%s", kind, log)
				}
			}
			for _, part := range leakedParts {
				if strings.Contains(log, part) {
					t.Errorf("the audit holds %q", part)
				}
			}
		})
	}
}

func TestResultSecretsAreLoggedAndPassedOnWithResultsLog(t *testing.T) {
	t.Parallel()
	srv, sink := leakEnv(t, "log")
	send := rawLines(t, srv)
	got := send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"vault__dump","arguments":{}}}`)
	if !strings.Contains(got, githubPAT) {
		t.Errorf("results: log got %.300s, want the result passed on", got)
	}
	if log := sinkText(sink); !strings.Contains(log, "result credentials: token, private_key (passed on, results: log)") {
		t.Errorf("the audit does not say what the result held:\n%s", log)
	}
}

func TestEscapedTokenInResultIsFoundAndRedacted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		raw  string
	}{
		{"a token spelled with a \\u escape", `{"content":[{"type":"text","text":"\u0067hp_abcdefghijklmnopqrstuvwxyz0123456789"}]}`},
		{"an AWS key behind an escaped first letter", `{"content":[{"type":"text","text":"x \u0041KIAIOSFODNN7EXAMPLE"}]}`},
		{"a token as a member name", `{"structuredContent":{"ghp_abcdefghijklmnopqrstuvwxyz0123456789":1}}`},
		{"a token in _meta", `{"_meta":{"k":"AKIAIOSFODNN7EXAMPLE"},"content":[]}`},
		{"a private key with escaped newlines", `{"content":[{"type":"text","text":"-----BEGIN PRIVATE KEY-----\nMIIEpAIBAAKCAQEAzLeakedKeyBody\n-----END PRIVATE KEY-----"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, findings := scan.JSON([]byte(tt.raw), true)
			if !findings.Found() {
				t.Fatalf("nothing found in %s", tt.raw)
			}
			if _, _, err := decodeResult(out); err != nil {
				t.Errorf("the redacted result %s does not decode: %v", out, err)
			}
			for _, part := range append(leakedParts, "IOSFODNN7EXAMPLE", "hp_abcdefghijklmnopqrstuvwxyz0123456789") {
				if strings.Contains(string(out), part) {
					t.Errorf("%s still holds %q", out, part)
				}
			}
		})
	}
}

// sinkText is the audit lines written to sink, one a line.
func sinkText(sink *memorySink) string {
	sink.mu.Lock()
	defer sink.mu.Unlock()
	return strings.Join(sink.lines, "\n")
}
