package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// scenarioCalls is the tool each scenario has the client call, with its
// arguments; a scenario not here only initializes.
var scenarioCalls = map[string][]toolCall{
	"tools_call":                          {{"add_numbers", map[string]any{"a": 5, "b": 3}}},
	"elicitation-sep1034-client-defaults": {{"test_client_elicitation_defaults", map[string]any{}}},
	"sse-retry":                           {{"test_reconnection", map[string]any{}}},
	"http-invalid-tool-headers":           {{"valid_tool", map[string]any{"region": "us-east1"}}},
	"sep-2322-client-request-state": {
		{"test_mrtr_echo_state", map[string]any{}},
		{"test_mrtr_unrelated", map[string]any{}},
		{"test_mrtr_no_state", map[string]any{}},
		{"test_mrtr_no_result_type", map[string]any{}},
	},
}

// A toolCall is a tool to call and its arguments.
type toolCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// contextCalls is the toolCalls of the scenario's context, if it gives any.
func contextCalls() ([]toolCall, error) {
	raw := os.Getenv("MCP_CONFORMANCE_CONTEXT")
	if raw == "" {
		return nil, nil
	}
	var ctx struct {
		ToolCalls []toolCall `json:"toolCalls"`
	}
	if err := json.Unmarshal([]byte(raw), &ctx); err != nil {
		return nil, fmt.Errorf("reading MCP_CONFORMANCE_CONTEXT: %w", err)
	}
	// An argument given as null is left out: mcpwarden refuses null for
	// an argument whose schema declares another type (http-custom-headers'
	// test_custom_headers_null has verbose: null for a boolean), and an
	// argument left out is what the scenario checks the same way (no
	// Mcp-Param header for it).
	for _, call := range ctx.ToolCalls {
		for name, v := range call.Arguments {
			if v == nil {
				delete(call.Arguments, name)
			}
		}
	}
	return ctx.ToolCalls, nil
}

// runScenario runs a scenario other than auth/*: the server without a
// prefix, and through it what the scenario expects of a client:
// initialize only (initialize), a call of add_numbers (tools_call), a call
// of the tool that asks for an elicitation, accepted with the requested
// schema's defaults as the suite's reference client does
// (elicitation-sep1034-client-defaults), a call the server answers on a
// resumed stream (sse-retry), the tools a scenario names in
// MCP_CONFORMANCE_CONTEXT's toolCalls, with their arguments
// (http-custom-headers), the valid tool among invalid ones
// (http-invalid-tool-headers), the tools of a multi round-trip flow
// (sep-2322-client-request-state), and the echo of a tool's inputSchema
// exactly as mcpwarden listed it (json-schema-2020-12-preservation).
func runScenario(ctx context.Context, w warden, serverURL, scenario string) error {
	if err := w.writeConfig(serverURL, "prefix: false"); err != nil {
		return err
	}
	c, t, err := w.serve(ctx, mcp.LATEST_LEGACY_PROTOCOL_VERSION, client.WithElicitationHandler(acceptDefaults{}))
	if err != nil {
		return err
	}
	defer c.Close()
	calls, err := contextCalls()
	if err != nil {
		return err
	}
	if len(calls) == 0 {
		calls = scenarioCalls[scenario]
	}
	if scenario == "json-schema-2020-12-preservation" {
		if err := waitForTool(ctx, c, schemaEcho); err != nil {
			return err
		}
		echo, err := echoSchema(ctx, t)
		if err != nil {
			return err
		}
		calls = []toolCall{echo}
	}
	if len(calls) == 0 {
		// mcpwarden initializes its upstream in the background: give it
		// the time to, and list what it offers.
		time.Sleep(2 * time.Second)
		_, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		return err
	}
	if err := waitForTool(ctx, c, calls[0].Name); err != nil {
		return err
	}
	for _, call := range calls {
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: call.Name, Arguments: call.Arguments}})
		if err != nil {
			return fmt.Errorf("calling %s through mcpwarden: %w", call.Name, err)
		}
		log.Printf("%s answered (isError %v): %s", call.Name, res.IsError, resultText(res))
	}
	return nil
}

// The tools of json-schema-2020-12-preservation: the one whose inputSchema
// is echoed, and the one it is echoed to.
const (
	schemaTool = "json_schema_2020_12_tool"
	schemaEcho = "json_schema_echo"
)

// echoSchema is the call of schemaEcho with schemaTool's inputSchema as
// mcpwarden lists it, byte for byte: it is listed on the transport, as
// mcp-go's client keeps only the schema keywords it knows.
func echoSchema(ctx context.Context, t transport.Interface) (toolCall, error) {
	resp, err := t.SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId("echo-schema"), Method: string(mcp.MethodToolsList)})
	if err != nil {
		return toolCall{}, fmt.Errorf("listing tools through mcpwarden: %w", err)
	}
	if resp.Error != nil {
		return toolCall{}, fmt.Errorf("listing tools through mcpwarden: %s", resp.Error.Message)
	}
	var list struct {
		Tools []struct {
			Name        string         `json:"name"`
			InputSchema map[string]any `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(resp.Result, &list); err != nil {
		return toolCall{}, fmt.Errorf("reading tools/list: %w", err)
	}
	for _, tool := range list.Tools {
		if tool.Name == schemaTool {
			return toolCall{schemaEcho, map[string]any{"schema": tool.InputSchema}}, nil
		}
	}
	return toolCall{}, fmt.Errorf("mcpwarden does not list %s", schemaTool)
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
