// Command conformancedriver is the client the MCP conformance suite's
// client mode runs for its scenarios other than auth/*, with mcpwarden as
// the client under test. The suite runs it with the URL of its scenario
// server as the only argument and the scenario in
// MCP_CONFORMANCE_SCENARIO. It writes a mcpwarden config with that URL as
// a remote server (no prefix, everything allowed), starts `mcpwarden
// serve` on stdio and, as a real client on the other side, drives what
// the scenario expects of a client through it: initialize only
// (initialize), a call of add_numbers (tools_call), a call of the tool
// that asks for an elicitation, accepted with the requested schema's
// defaults as the suite's reference client does
// (elicitation-sep1034-client-defaults), a call the server answers on a
// resumed stream (sse-retry). The mcpwarden binary is in the MCPWARDEN
// environment variable.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// scenarioCalls is the tool each scenario has the client call, with its
// arguments; a scenario not here only initializes.
var scenarioCalls = map[string]struct {
	tool string
	args map[string]any
}{
	"tools_call":                          {"add_numbers", map[string]any{"a": 5, "b": 3}},
	"elicitation-sep1034-client-defaults": {"test_client_elicitation_defaults", map[string]any{}},
	"sse-retry":                           {"test_reconnection", map[string]any{}},
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("conformancedriver: ")
	if len(os.Args) != 2 {
		log.Fatal("usage: conformancedriver SERVER_URL (MCPWARDEN=path of the mcpwarden binary)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	if err := run(ctx, os.Args[1], os.Getenv("MCP_CONFORMANCE_SCENARIO")); err != nil {
		log.Fatalf("scenario %s: %v", os.Getenv("MCP_CONFORMANCE_SCENARIO"), err)
	}
}

func run(ctx context.Context, serverURL, scenario string) error {
	bin := os.Getenv("MCPWARDEN")
	if bin == "" {
		return errors.New("MCPWARDEN is not set")
	}
	dir, err := os.MkdirTemp("", "conformancedriver-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	config := filepath.Join(dir, "mcpwarden.yaml")
	yaml := fmt.Sprintf(`servers:
  conf:
    url: %q
    prefix: false
policy:
  default: allow
audit:
  path: %q
`, serverURL, filepath.Join(dir, "audit.jsonl"))
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		return err
	}
	t := transport.NewStdioWithOptions(bin, append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(dir, "state")), []string{"serve", "--config", config})
	c := client.NewClient(t, client.WithElicitationHandler(acceptDefaults{}))
	if err := c.Start(ctx); err != nil {
		return fmt.Errorf("starting mcpwarden serve: %w", err)
	}
	defer c.Close()
	if stderr, ok := client.GetStderr(c); ok {
		go io.Copy(os.Stderr, stderr)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION,
		ClientInfo:      mcp.Implementation{Name: "conformancedriver", Version: "1"},
	}}); err != nil {
		return fmt.Errorf("initializing mcpwarden: %w", err)
	}
	call, ok := scenarioCalls[scenario]
	if !ok {
		// mcpwarden initializes its upstream in the background: give it
		// the time to, and list what it offers.
		time.Sleep(2 * time.Second)
		_, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		return err
	}
	if err := waitForTool(ctx, c, call.tool); err != nil {
		return err
	}
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: call.tool, Arguments: call.args}})
	if err != nil {
		return fmt.Errorf("calling %s through mcpwarden: %w", call.tool, err)
	}
	log.Printf("%s answered (isError %v): %s", call.tool, res.IsError, resultText(res))
	return nil
}

// waitForTool lists mcpwarden's tools until tool is among them: the
// upstream is started in the background.
func waitForTool(ctx context.Context, c *client.Client, tool string) error {
	for {
		res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			return fmt.Errorf("listing tools through mcpwarden: %w", err)
		}
		if slices.ContainsFunc(res.Tools, func(t mcp.Tool) bool { return t.Name == tool }) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("mcpwarden never listed %s: %w", tool, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// acceptDefaults is the human at the client: it accepts every
// elicitation, with the default of each field the requested schema gives
// one (SEP-1034), as the suite's reference client does.
type acceptDefaults struct{}

func (acceptDefaults) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	content := map[string]any{}
	if schema, ok := req.Params.RequestedSchema.(map[string]any); ok {
		props, _ := schema["properties"].(map[string]any)
		for name, p := range props {
			if def, ok := p.(map[string]any)["default"]; ok {
				content[name] = def
			}
		}
	}
	log.Printf("elicitation %q accepted with %v", req.Params.Message, content)
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: content}}, nil
}

// resultText is the text of a tool result.
func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}
