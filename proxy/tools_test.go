package proxy

import (
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/proxy/naming"
	"github.com/mcpwarden/mcpwarden/rules"
)

func listNames(t *testing.T, e *env) []string {
	t.Helper()
	c := e.client(t)
	res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

func TestSetToolsReplacesAServersTools(t *testing.T) {
	t.Parallel()
	sink := &memorySink{}
	e := newEnv(t, allowAll, audit.Config{}, sink)
	if got, want := listNames(t, e), []string{"up__echo", "up__rich", "up__write"}; !slices.Equal(got, want) {
		t.Fatalf("tools = %v, want %v", got, want)
	}
	echo := mcp.NewTool("echo", mcp.WithString("text"), mcp.WithDescription("now described"))
	if err := e.srv.SetTools(t.Context(), "up", []mcp.Tool{echo, mcp.NewTool("fresh")}); err != nil {
		t.Fatal(err)
	}
	if got, want := listNames(t, e), []string{"up__echo", "up__fresh"}; !slices.Equal(got, want) {
		t.Errorf("tools after the change = %v, want %v", got, want)
	}
	if _, ok := e.srv.Lookup("up__write"); ok {
		t.Error("a removed tool is still routable")
	}
	events := sink.events(t)
	if len(events) != 1 || events[0].Event != audit.KindToolsChanged {
		t.Fatalf("audit = %+v, want one tools_changed event", events)
	}
	for _, want := range []string{"+mcp:up:fresh", "-mcp:up:rich", "-mcp:up:write", "~mcp:up:echo"} {
		if !strings.Contains(events[0].Detail, want) {
			t.Errorf("tools_changed detail %q lacks %q", events[0].Detail, want)
		}
	}
}

func TestSetToolsRefusesACollision(t *testing.T) {
	t.Parallel()
	e := newEnv(t, allowAll, audit.Config{}, &memorySink{})
	err := e.srv.SetTools(t.Context(), "up", []mcp.Tool{mcp.NewTool("a.b"), mcp.NewTool("a_b")})
	if err == nil || !strings.Contains(err.Error(), "mcp:up:a.b") {
		t.Fatalf("SetTools with a collision = %v, want an error naming both tools", err)
	}
	if _, ok := e.srv.Lookup("up__echo"); !ok {
		t.Error("a refused update dropped the old tools")
	}
}

func TestUnprefixedServerKeepsToolNames(t *testing.T) {
	t.Parallel()
	pool, rec := startUpstream(t)
	p, err := rules.Compile(rules.Spec{Global: allowAll, Servers: map[string]rules.ServerSpec{"up": {}}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Upstream: pool, Policy: p, Audit: audit.New(&memorySink{}, audit.Config{}), Naming: naming.Scheme{Unprefixed: map[string]bool{"up": true}}})
	if err != nil {
		t.Fatal(err)
	}
	adopt(t, srv)
	e := &env{pool: pool, srv: srv, rec: rec}
	if got, want := listNames(t, e), []string{"echo", "rich", "write"}; !slices.Equal(got, want) {
		t.Errorf("tools = %v, want the upstream's own names %v", got, want)
	}
	res := testkit.CallTool(t, e.client(t), "echo", map[string]any{"text": "plain"})
	if res.IsError || res.Content[0].(mcp.TextContent).Text != "plain" {
		t.Errorf("echo by its own name = %+v", res)
	}
}
