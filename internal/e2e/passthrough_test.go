package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// everythingFixture fronts server-everything alone, with everything allowed.
func everythingFixture(t *testing.T) *fixture {
	return newFixture(t, "stdio", "  everything:\n"+serverEverything(), `  allow: ["mcp:everything:*"]`)
}

// everythingForm fills in server-everything's elicitation form.
var everythingForm = map[string]any{"name": "Ada", "color": "red", "email": "ada@example.com", "check": true}

type model struct{}

func (model) CreateMessage(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return &mcp.CreateMessageResult{
		SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.TextContent{Type: "text", Text: "sampled by the test client"}},
		Model:           "test-model",
		StopReason:      "endTurn",
	}, nil
}

type roots struct{}

func (roots) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///work/the-clients-root", Name: "workspace"}}}, nil
}

// TestProgressReachesTheClient: server-everything's progress reaches the
// client with the client's own token, before the call's result, over
// either front.
func TestProgressReachesTheClient(t *testing.T) {
	t.Parallel()
	for _, front := range []string{"stdio", "http"} {
		t.Run(front, func(t *testing.T) {
			t.Parallel()
			var c *client.Client
			if front == "stdio" {
				c = connectStdio(t, everythingFixture(t), client.WithLegacyProtocolOnly())
			} else {
				f := newFixture(t, testkit.FreeAddr(t), "  everything:\n"+serverEverything(), `  allow: ["mcp:everything:*"]`)
				url, _ := startHTTP(t, f)
				tr, err := transport.NewStreamableHTTP(url)
				if err != nil {
					t.Fatal(err)
				}
				c = client.NewClient(tr, client.WithLegacyProtocolOnly())
				t.Cleanup(func() { c.Close() })
				initialize(t, c)
			}
			var mu sync.Mutex
			var tokens []any
			c.OnNotification(func(n mcp.JSONRPCNotification) {
				if n.Method == "notifications/progress" {
					mu.Lock()
					tokens = append(tokens, n.Params.AdditionalFields["progressToken"])
					mu.Unlock()
				}
			})
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{
				Name:      "everything__trigger-long-running-operation",
				Arguments: map[string]any{"duration": 1, "steps": 3},
				Meta:      &mcp.Meta{ProgressToken: "client-token-7"},
			}})
			if err != nil || res.IsError {
				t.Fatalf("long-running operation: %v %+v", err, res)
			}
			// The progress came before the result, as the server sent it (the
			// client's reader handles messages in order, so it has them all now).
			mu.Lock()
			defer mu.Unlock()
			if len(tokens) < 3 {
				t.Fatalf("got %d progress notifications before the result, want 3", len(tokens))
			}
			for _, tok := range tokens {
				if tok != "client-token-7" {
					t.Errorf("progress carried token %v, want the client's own", tok)
				}
			}
		})
	}
}

func TestUpstreamRequestsReachTheCallingClient(t *testing.T) {
	t.Parallel()
	f := everythingFixture(t)
	h := &human{answer: accepts(everythingForm)}
	c := connectStdio(t, f, client.WithLegacyProtocolOnly(), client.WithSamplingHandler(model{}), client.WithRootsHandler(roots{}), client.WithElicitationHandler(h))

	res := callTool(t, c, "everything__trigger-sampling-request", map[string]any{"prompt": "say hi", "maxTokens": 20})
	if res.IsError || !strings.Contains(testkit.Text(res), "sampled by the test client") {
		t.Errorf("sampling through the proxy = %q (isError %v)", testkit.Text(res), res.IsError)
	}
	// mcpwarden answers roots/list itself, with the server's workspace or
	// root: the client's own roots are not passed to a shared server.
	res = callTool(t, c, "everything__get-roots-list", nil)
	if strings.Contains(testkit.Text(res), "file:///work/the-clients-root") {
		t.Errorf("the client's roots reached the upstream: %q", testkit.Text(res))
	}
	res = callTool(t, c, "everything__trigger-elicitation-request", nil)
	if res.IsError || h.times() != 1 || !strings.Contains(testkit.Text(res), "accept") || !strings.HasPrefix(firstAsked(h), "[everything] ") {
		t.Errorf("elicitation through the proxy = %q, asked %d times", testkit.Text(res), h.times())
	}
	var sampling []auditEvent
	for _, e := range readAudit(t, f.auditPath, "decision") {
		if e.Tool == "mcp:everything:sampling/createMessage" {
			sampling = append(sampling, e)
		}
	}
	if len(sampling) != 1 || sampling[0].Decision != "allow" {
		t.Errorf("audit of sampling = %+v, want one allow", sampling)
	}
}

// TestModernClientAnswersServerEverythingsRequestsThroughItsRetries: a
// client of 2026-07-28 cannot be sent a request, so server-everything's
// elicitation and sampling requests during a call (it speaks the
// handshake, over stdio) reach it in its call's result, and its retries
// bring the answers back while mcpwarden holds the call.
func TestModernClientAnswersServerEverythingsRequestsThroughItsRetries(t *testing.T) {
	t.Parallel()
	f := everythingFixture(t)
	h := &human{answer: accepts(everythingForm)}
	c := connectStdio(t, f, client.WithSamplingHandler(model{}), client.WithElicitationHandler(h))
	if v := c.ProtocolVersion(); !mcp.IsModernProtocol(v) {
		t.Fatalf("the client speaks %q to mcpwarden, want 2026-07-28", v)
	}
	res := callTool(t, c, "everything__trigger-elicitation-request", nil)
	if res.IsError || h.times() != 1 || !strings.Contains(testkit.Text(res), "accept") || !strings.HasPrefix(firstAsked(h), "[everything] ") {
		t.Errorf("elicitation through the proxy = %q (isError %v), asked %d times (%q)", testkit.Text(res), res.IsError, h.times(), firstAsked(h))
	}
	res = callTool(t, c, "everything__trigger-sampling-request", map[string]any{"prompt": "say hi", "maxTokens": 20})
	if res.IsError || !strings.Contains(testkit.Text(res), "sampled by the test client") {
		t.Errorf("sampling through the proxy = %q (isError %v)", testkit.Text(res), res.IsError)
	}
	var relayed int
	for _, e := range readAudit(t, f.auditPath, "result") {
		if strings.Contains(e.Detail, "asked for input") {
			relayed++
		}
	}
	if relayed != 2 {
		t.Errorf("%d rounds audited as relayed to the client, want 2 (the elicitation and the sampling)", relayed)
	}
}

// TestSamplingDeniedByPolicy: a server whose policy.sampling is deny is
// not offered sampling at all (mcpwarden would refuse every request), so
// server-everything, which offers its sampling tool only to a client that
// declares sampling, does not list it, and nothing is sampled.
func TestSamplingDeniedByPolicy(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "stdio", "  everything:\n"+serverEverything()+"\n    policy: { sampling: deny }", `  allow: ["mcp:everything:*"]`)
	c := connectStdio(t, f, client.WithLegacyProtocolOnly(), client.WithSamplingHandler(model{}))
	testkit.Eventually(t, 30*time.Second, "everything's tools listed", func() bool {
		res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
		if err != nil || len(res.Tools) == 0 {
			return false
		}
		for _, tool := range res.Tools {
			if tool.Name == "everything__trigger-sampling-request" {
				t.Fatalf("the server was offered sampling despite policy.sampling: deny: it lists %s", tool.Name)
			}
		}
		return true
	})
	for _, e := range readAudit(t, f.auditPath, "decision") {
		if e.Tool == "mcp:everything:sampling/createMessage" {
			t.Errorf("a sampling request reached mcpwarden: %+v", e)
		}
	}
}

func TestResourcesAndPromptsPassThrough(t *testing.T) {
	t.Parallel()
	f := everythingFixture(t)
	c := connectStdio(t, f, client.WithLegacyProtocolOnly())
	res, err := c.ListResources(t.Context(), mcp.ListResourcesRequest{})
	if err != nil || len(res.Resources) == 0 {
		t.Fatalf("resources/list = %v, %v", res, err)
	}
	read, err := c.ReadResource(t.Context(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: res.Resources[0].URI}})
	if err != nil || len(read.Contents) == 0 {
		t.Fatalf("resources/read %s = %v, %v", res.Resources[0].URI, read, err)
	}
	prompts, err := c.ListPrompts(t.Context(), mcp.ListPromptsRequest{})
	if err != nil || len(prompts.Prompts) == 0 {
		t.Fatalf("prompts/list = %v, %v", prompts, err)
	}
	for _, p := range prompts.Prompts {
		if !strings.HasPrefix(p.Name, "everything__") {
			t.Errorf("prompt %q is not named after its server", p.Name)
		}
	}
}

// firstAsked is the first message h was shown, "" if none.
func firstAsked(h *human) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.asked) == 0 {
		return ""
	}
	return h.asked[0]
}
