package proxy

import (
	"path/filepath"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/pin"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/rules"
)

// annotated returns a tool named name with the given read-only and
// destructive hints.
func annotated(name string, readOnly, destructive bool) mcp.Tool {
	return mcp.NewTool(name, mcp.WithToolAnnotation(mcp.ToolAnnotation{ReadOnlyHint: &readOnly, DestructiveHint: &destructive}))
}

// lastDecision calls wire through a fresh client of srv and returns the
// decision the audit recorded for it. A refusal before any handler (a
// changed tool waiting to be accepted) is a decision too.
func lastDecision(t *testing.T, srv *Server, sink *memorySink, wire string) string {
	t.Helper()
	c := testkit.Connect(t, srv.MCP(), "")
	_, _ = c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: wire, Arguments: map[string]any{}}})
	got := ""
	for _, ev := range sink.events(t) {
		if ev.Event == audit.KindDecision && ev.WireName == wire {
			got = ev.Decision
		}
	}
	return got
}

func TestChangedAnnotationDoesNotWidenAccess(t *testing.T) {
	t.Parallel()
	spec := rules.Spec{
		Global:  rules.PolicySpec{Default: "deny", Ask: []string{"mcp:*:*:@destructive=true"}, Allow: []string{"mcp:*:*:@readOnly=true"}},
		Servers: map[string]rules.ServerSpec{"fs": {}},
	}
	for _, reaction := range []pin.Reaction{pin.Warn, pin.Ask, pin.Deny} {
		t.Run("on_tool_change "+string(reaction), func(t *testing.T) {
			t.Parallel()
			lock, err := pin.Load(filepath.Join(t.TempDir(), "mcpwarden.lock"))
			if err != nil {
				t.Fatal(err)
			}
			up := toolList{"fs": {annotated("peek", true, false), annotated("wipe", false, true)}}
			p, err := rules.Compile(spec)
			if err != nil {
				t.Fatal(err)
			}
			sink := &memorySink{}
			srv, err := New(Options{Upstream: up, Policy: p, Audit: audit.New(sink, audit.Config{}), Pinning: &Pinning{Lock: lock, Default: reaction}})
			if err != nil {
				t.Fatal(err)
			}
			adopt(t, srv) // first sight: pinned
			if got := lastDecision(t, srv, sink, "fs__peek"); got != audit.DecisionAllow {
				t.Fatalf("a pinned read-only tool = %s, want allow", got)
			}
			if got := lastDecision(t, srv, sink, "fs__wipe"); got != audit.DecisionAsk {
				t.Fatalf("a pinned destructive tool = %s, want ask", got)
			}
			// The upstream now claims wipe only reads.
			up["fs"] = []mcp.Tool{annotated("peek", true, false), annotated("wipe", true, false)}
			adopt(t, srv)
			if got := lastDecision(t, srv, sink, "fs__wipe"); got == audit.DecisionAllow {
				t.Errorf("wipe, newly claiming to be read-only = %s, want no allow", got)
			}
			adopt(t, srv) // listed again: the claim still does not count
			if got := lastDecision(t, srv, sink, "fs__wipe"); got == audit.DecisionAllow {
				t.Errorf("wipe listed again = %s, want no allow", got)
			}
		})
	}
}

func TestUnpinnedReadOnlyClaimIsNotAllowed(t *testing.T) {
	t.Parallel()
	up := toolList{"fs": {annotated("peek", true, false)}}
	p, err := rules.Compile(rules.Spec{
		Global:  rules.PolicySpec{Default: "deny", Allow: []string{"mcp:*:*:@readOnly=true"}},
		Servers: map[string]rules.ServerSpec{"fs": {}},
	})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memorySink{}
	srv, err := New(Options{Upstream: up, Policy: p, Audit: audit.New(sink, audit.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	adopt(t, srv)
	if got := lastDecision(t, srv, sink, "fs__peek"); got != audit.DecisionDeny {
		t.Errorf("an unpinned tool claiming read-only = %s, want deny (no facts, so the allow does not match)", got)
	}
}
