package main

import (
	"bytes"
	"strings"
	"testing"
	"unicode"

	"github.com/mcpwarden/mcpwarden/internal/approvals"
)

func TestApprovalsListingCannotBeOverwrittenOrReversed(t *testing.T) {
	t.Parallel()
	forged := map[string]any{"path\u202e": "/srv/app/run.sh\rcontent: \"# meeting notes\"", "x\r\n\x1b[2K": "\u2066y\u2069"}
	tests := []struct {
		name string
		ask  approvals.Pending
	}{
		{"an ask from an mcpwarden that sends its arguments only", approvals.Pending{Request: approvals.Request{ID: "a1", Tool: "mcp:fs:write_file\u202e", Arguments: forged}}},
		{"an ask whose lines hold raw characters", approvals.Pending{Request: approvals.Request{ID: "a2", Tool: "mcp:fs:write_file", Arguments: forged, Lines: []string{"\"path\": \"a\rb\u202e\""}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			printPending(&out, approvals.Snapshot{Pending: []approvals.Pending{tt.ask}})
			for i, r := range out.String() {
				if r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r)) {
					t.Errorf("the listing holds U+%04X at byte %d:\n%q", r, i, out.String())
				}
			}
			if !strings.Contains(out.String(), `\u202e`) || !strings.Contains(out.String(), `\r`) {
				t.Errorf("the listing does not show the hidden characters as escapes:\n%s", out.String())
			}
		})
	}
}
