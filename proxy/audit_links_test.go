package proxy

import (
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/rules"
)

func TestResultEventsNameTheirDecision(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, rules.Spec{Global: rules.PolicySpec{Allow: []string{"mcp:*:*"}}}, Options{})
	c := e.client(t)
	ctx := t.Context()
	for range 2 {
		if _, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "fs__echo", Arguments: map[string]any{"text": "x"}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "fs+file:///srv/readme"}}); err != nil {
			t.Fatal(err)
		}
	}
	decisions := map[string]audit.Event{}
	results := 0
	for _, ev := range e.sink.events(t) {
		switch ev.Event {
		case audit.KindDecision:
			if _, dup := decisions[ev.ID]; dup {
				t.Errorf("two decisions with id %s", ev.ID)
			}
			decisions[ev.ID] = ev
		case audit.KindResult:
			results++
			d, ok := decisions[ev.DecisionID]
			switch {
			case ev.DecisionID == "":
				t.Errorf("result of %s has no decision_id", ev.Tool)
			case !ok:
				t.Errorf("result of %s names decision %s, which is not an earlier decision", ev.Tool, ev.DecisionID)
			case d.Tool != ev.Tool || d.Session != ev.Session:
				t.Errorf("result of %s names the decision of %s", ev.Tool, d.Tool)
			}
			delete(decisions, ev.DecisionID) // each decision has one result
		}
	}
	if results != 4 {
		t.Errorf("got %d result events, want 4", results)
	}
}
