package app

import (
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/egress"
	"github.com/mcpwarden/mcpwarden/rules"
)

// TestListingLetsThroughOnlyWhatTheRulesAllow: tools, validate and pin
// start the servers with no one to ask, so an npx server's first start
// reaches the registry a rule allows, and nothing the rules would ask
// about or deny.
func TestListingLetsThroughOnlyWhatTheRulesAllow(t *testing.T) {
	t.Parallel()
	p, err := rules.Compile(rules.Spec{
		Global:  rules.PolicySpec{Default: "ask", Allow: []string{"mcp:*:*", "mcp:fs:network/connect:host=registry.npmjs.org"}, Deny: []string{"mcp:fs:network/connect:host=evil.example"}},
		Servers: map[string]rules.ServerSpec{"fs": {}},
	})
	if err != nil {
		t.Fatal(err)
	}
	peer := listingPeer{policy: p}
	tests := []struct {
		name string
		host string
		want egress.Decision
	}{
		{"the registry a rule allows", "registry.npmjs.org", egress.Allow},
		{"the registry in another spelling", "Registry.NPMJS.org.", egress.Allow},
		{"a host the rules would ask about", "example.com", egress.Refuse},
		{"a host the rules deny", "evil.example", egress.Refuse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := peer.DecideConnect(t.Context(), "fs", nil, egress.Request{Host: tt.host, Port: 443})
			if v.Decision != tt.want {
				t.Errorf("%s:443 = %s (%s), want %s", tt.host, v.Decision, v.Reason, tt.want)
			}
		})
	}
}
