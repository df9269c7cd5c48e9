package proxy

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/proxy/scan"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// leakedSecret is what the leaky upstream puts in its notifications and
// completions: an .envrc line whose key id alone the scanner used to find.
const leakedSecret = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

// leakyCompletions completes every prompt argument with a credential.
type leakyCompletions struct{}

func (leakyCompletions) CompletePromptArgument(context.Context, string, mcp.CompleteArgument, mcp.CompleteContext) (*mcp.Completion, error) {
	return &mcp.Completion{Values: []string{"plain", leakedSecret, "token ghp_abcdefghijklmnopqrstuvwxyz0123"}}, nil
}

// leakyEnv is a proxy in front of an upstream that sends credentials in a
// log notification (tool log), a progress notification (tool progress)
// and completion values, and a client that records the notifications it
// gets.
type leakyEnv struct {
	srv    *Server
	sink   *memorySink
	client *client.Client
	mu     sync.Mutex
	got    []mcp.JSONRPCNotification
}

func newLeakyEnv(t *testing.T, results string) *leakyEnv {
	t.Helper()
	e := &leakyEnv{sink: &memorySink{}}
	up := testkit.NewStandIn(server.WithLogging(), server.WithCompletions(), server.WithPromptCapabilities(false),
		server.WithPromptCompletionProvider(leakyCompletions{}))
	up.AddTool(mcp.NewTool("log"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		err := server.ServerFromContext(ctx).SendNotificationToClient(ctx, string(mcp.MethodNotificationMessage), map[string]any{
			"level": "info", "data": map[string]any{"env": "export " + leakedSecret + "\n"},
		})
		if err != nil {
			return nil, err
		}
		e.holdUntilReceived(ctx, mcp.MethodNotificationMessage)
		return mcp.NewToolResultText("logged"), nil
	})
	up.AddTool(mcp.NewTool("progress"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		err := server.ServerFromContext(ctx).SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{
			"progressToken": req.Params.Meta.ProgressToken, "progress": 1, "total": 2, "message": "loaded " + leakedSecret,
		})
		if err != nil {
			return nil, err
		}
		e.holdUntilReceived(ctx, mcp.MethodNotificationProgress)
		return mcp.NewToolResultText("done"), nil
	})
	up.MCP().AddPrompt(mcp.NewPrompt("greet", mcp.WithArgument("who")), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return mcp.NewGetPromptResult("greeting", nil), nil
	})
	pool := upstream.New(map[string]upstream.Spec{"leaky": {Transport: upstream.TransportHTTP, URL: up.URL(t)}}, nil)
	t.Cleanup(func() { pool.Close() })
	p, err := rules.Compile(rules.Spec{Global: rules.PolicySpec{Allow: []string{"mcp:*:*"}}, Servers: map[string]rules.ServerSpec{"leaky": {}}, Results: results})
	if err != nil {
		t.Fatal(err)
	}
	e.srv, err = New(Options{Upstream: pool, Policy: p, Audit: audit.New(e.sink, audit.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.srv.Close)
	pool.Start(t.Context(), e.srv.Peer())
	if err := pool.Err("leaky"); err != nil {
		t.Fatal(err)
	}
	adopt(t, e.srv)
	e.client = testkit.Connect(t, e.srv.MCP(), "")
	e.client.OnNotification(func(n mcp.JSONRPCNotification) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.got = append(e.got, n)
	})
	return e
}

// holdUntilReceived keeps the upstream's call open until the client has
// a notification of method, for at most a second. mcp-go's streamable
// HTTP server may drop a notification sent just before its handler
// returns (its forwarder finds the request done); holding the call also
// keeps a progress token routable until its notification is through.
func (e *leakyEnv) holdUntilReceived(ctx context.Context, method mcp.MCPMethod) {
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		e.mu.Lock()
		got := slices.ContainsFunc(e.got, func(n mcp.JSONRPCNotification) bool { return n.Method == string(method) })
		e.mu.Unlock()
		if got {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// notification waits for the client's first notification of method and
// returns it as JSON.
func (e *leakyEnv) notification(t *testing.T, method mcp.MCPMethod) string {
	t.Helper()
	var text string
	testkit.Eventually(t, 5*time.Second, "a "+string(method)+" notification", func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, n := range e.got {
			if n.Method == string(method) {
				raw, _ := json.Marshal(n)
				text = string(raw)
				return true
			}
		}
		return false
	})
	return text
}

// noted reports whether the audit has a result event of canonical that
// says what was found.
func (e *leakyEnv) noted(t *testing.T, canonical string) bool {
	t.Helper()
	for _, ev := range e.sink.events(t) {
		if ev.Event == audit.KindResult && ev.Tool == canonical && strings.Contains(ev.Detail, "secret_assignment") {
			return true
		}
	}
	return false
}

func TestLogNotificationIsScanned(t *testing.T) {
	t.Parallel()
	for _, results := range []string{"redact", "deny", "ask"} {
		t.Run("results "+results, func(t *testing.T) {
			t.Parallel()
			e := newLeakyEnv(t, results)
			testkit.CallTool(t, e.client, "leaky__log", map[string]any{})
			got := e.notification(t, mcp.MethodNotificationMessage)
			if strings.Contains(got, "wJalrXUtnFEMI") {
				t.Errorf("the client got the credential in a log notification: %s", got)
			}
			if !strings.Contains(got, "AWS_SECRET_ACCESS_KEY="+scan.Mask) {
				t.Errorf("log notification = %s, want the credential redacted in place", got)
			}
			if !e.noted(t, "mcp:leaky:notifications/message") {
				t.Errorf("no audit event says the log notification held a credential")
			}
		})
	}
}

func TestLogNotificationPassesUnderResultsLog(t *testing.T) {
	t.Parallel()
	e := newLeakyEnv(t, "log")
	testkit.CallTool(t, e.client, "leaky__log", map[string]any{})
	if got := e.notification(t, mcp.MethodNotificationMessage); !strings.Contains(got, "wJalrXUtnFEMI") {
		t.Errorf("log notification = %s, want it as sent under results: log", got)
	}
	if !e.noted(t, "mcp:leaky:notifications/message") {
		t.Errorf("no audit event says the log notification held a credential")
	}
}

func TestProgressNotificationIsScanned(t *testing.T) {
	t.Parallel()
	e := newLeakyEnv(t, "")
	_, err := e.client.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{
		Name: "leaky__progress", Arguments: map[string]any{}, Meta: &mcp.Meta{ProgressToken: "p1"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	got := e.notification(t, mcp.MethodNotificationProgress)
	if strings.Contains(got, "wJalrXUtnFEMI") {
		t.Errorf("the client got the credential in a progress notification: %s", got)
	}
	if !strings.Contains(got, `"progressToken":"p1"`) {
		t.Errorf("progress notification = %s, want it still routed to the client's token", got)
	}
	if !e.noted(t, "mcp:leaky:notifications/progress") {
		t.Errorf("no audit event says the progress notification held a credential")
	}
}

func TestCompletionValuesAreScanned(t *testing.T) {
	t.Parallel()
	complete := func(e *leakyEnv) (*mcp.CompleteResult, error) {
		return e.client.Complete(t.Context(), mcp.CompleteRequest{Params: mcp.CompleteParams{
			Ref: mcp.PromptReference{Type: "ref/prompt", Name: "leaky__greet"}, Argument: mcp.CompleteArgument{Name: "who", Value: "a"},
		}})
	}
	e := newLeakyEnv(t, "redact")
	res, err := complete(e)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"plain", "AWS_SECRET_ACCESS_KEY=" + scan.Mask, "token " + scan.Mask}
	if strings.Join(res.Completion.Values, "|") != strings.Join(want, "|") {
		t.Errorf("completion values = %q, want %q", res.Completion.Values, want)
	}
	if res, err := complete(newLeakyEnv(t, "deny")); err == nil {
		t.Errorf("completion under results: deny = %q, want it withheld", res.Completion.Values)
	}
}
