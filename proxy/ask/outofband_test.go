package ask

import (
	"testing"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/approvals"
)

func TestEachApprovalChannelIsAuditedAsItsOwnGrantedBy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		via  approvals.Via
		want audit.GrantedBy
	}{
		{"the approvals page", approvals.ViaPage, audit.GrantedByApprovalPage},
		{"mcpwarden approve", approvals.ViaCLI, audit.GrantedByApprovalCLI},
		{"the external resolver", approvals.ViaResolver, audit.GrantedByResolver},
		{"a channel not named is the external resolver", approvals.ViaNone, audit.GrantedByResolver},
		{"a channel no constant names is still the external resolver", approvals.Via(200), audit.GrantedByResolver},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := grantedByVia(tt.via); got != tt.want {
				t.Errorf("grantedByVia(%v) = %q, want %q", tt.via, got, tt.want)
			}
		})
	}
}
