package e2e

import (
	"path/filepath"
	"testing"

	"github.com/mark3labs/mcp-go/client"
)

// TestApproveAndDenyWithTheCLIAreToldApartByOutcome is the measured gap of
// issue 36: an ask settled with mcpwarden approve and one settled with
// mcpwarden deny both said "decision":"ask","granted_by":"approval_cli".
// Now the decision event says how it ended, in outcome.
func TestApproveAndDenyWithTheCLIAreToldApartByOutcome(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, command, want string
		written             bool
	}{
		{"approved", "approve", "allowed", true},
		{"denied", "deny", "refused", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := approvalsFixture(t, "20s")
			c := connectStdio(t, f, client.WithElicitationHandler(&human{answer: cancels}))
			tok := readPageToken(t, f)
			target := filepath.Join(f.sandbox, "out.txt")
			pending := callAsync(t, c, map[string]any{"path": target, "content": "x"})
			runCLI(t, tt.command, pendingAskID(t, tok), "--config", f.config)
			result(t, pending)
			if exists(target) != tt.written {
				t.Errorf("written = %v, want %v", exists(target), tt.written)
			}
			events := decisionEvents(t, f.auditPath)
			if len(events) != 1 {
				t.Fatalf("decision events = %v, want one", events)
			}
			e := events[0]
			if field(e, "decision") != "ask" || field(e, "granted_by") != "approval_cli" || field(e, "outcome") != tt.want {
				t.Errorf("decision %q granted_by %q outcome %q, want ask, approval_cli, %s", field(e, "decision"), field(e, "granted_by"), field(e, "outcome"), tt.want)
			}
		})
	}
}
