package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/mark3labs/mcp-go/client"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// TestApprovalPageOutcomeIsShownAndAudited settles two asks by clicking on
// the approvals page in a browser, one allowed and one denied, and checks
// both ends of issue 36's outcome: the page's "Recently decided" table
// shows how each ended, and the audit log's decision events, both
// "granted_by":"approval_page", tell them apart by outcome (allowed,
// refused), in the order they were settled.
func TestApprovalPageOutcomeIsShownAndAudited(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	f := approvalsFixture(t, "20s")
	c := connectStdio(t, f, client.WithLegacyProtocolOnly()) // no elicitation handler: the page settles the asks
	tok := readPageToken(t, f)
	within(t, browser, 10*time.Second,
		chromedp.Navigate(tok.URL+"?token="+tok.Token),
		chromedp.Poll[chromedp.Void](`document.getElementById("status").textContent === "live"`),
	)
	awaitListed(t, c, "fs__write_file")

	tests := []struct {
		name, button, outcome string
		written               bool
	}{
		{"allowed once", "allow_once", "allowed", true},
		{"denied", "deny", "refused", false},
	}
	for i, tt := range tests {
		target := filepath.Join(f.sandbox, fmt.Sprintf("outcome-%d.txt", i))
		pending := callAsync(t, c, map[string]any{"path": target, "content": tt.name})
		within(t, browser, 5*time.Second,
			chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.querySelectorAll("#recent tbody tr").length === %d`, i)),
			chromedp.Poll[chromedp.Void](onlyNewAsk),
			chromedp.Click(chromedp.CSS("li.ask button."+tt.button)),
		)
		res := result(t, pending)
		if res.IsError == tt.written || exists(target) != tt.written {
			t.Errorf("%s: result %q (isError %v), written %v; want written %v", tt.name, testkit.Text(res), res.IsError, exists(target), tt.written)
		}
	}

	within(t, browser, 5*time.Second,
		chromedp.Poll[chromedp.Void](`document.querySelectorAll("li.ask").length === 0 && document.querySelectorAll("#recent tbody tr").length === 2`),
	)
	// Newest first: the deny, then the allow.
	for row, want := range []string{"outcome-deny", "outcome-allow_once"} {
		js := fmt.Sprintf(`document.querySelectorAll("#recent tbody tr")[%d].querySelector("td.%s") !== null`, row, want)
		if !eval[bool](t, browser, js) {
			shown := eval[string](t, browser, fmt.Sprintf(`document.querySelectorAll("#recent tbody tr")[%d].textContent`, row))
			t.Errorf("the page's recent decision %d = %q, want its outcome cell %s", row, shown, want)
		}
	}

	events := decisionEvents(t, f.auditPath)
	if len(events) != len(tests) {
		t.Fatalf("decision events = %v, want %d", events, len(tests))
	}
	for i, tt := range tests {
		e := events[i]
		if field(e, "decision") != "ask" || field(e, "granted_by") != "approval_page" || field(e, "outcome") != tt.outcome {
			t.Errorf("%s: decision %q granted_by %q outcome %q, want ask, approval_page, %s", tt.name, field(e, "decision"), field(e, "granted_by"), field(e, "outcome"), tt.outcome)
		}
	}
}
