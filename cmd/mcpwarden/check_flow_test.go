package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const flowConfig = `servers:
  web: { url: "https://web.test/mcp" }
  mail: { url: "https://mail.test/mcp" }
policy:
  allow: ["mcp:web:*", "mcp:mail:*"]
labels:
  untrusted_input: ["mcp:web:fetch"]
  egress: ["mcp:mail:send_*"]
flow:
  - { after: untrusted_input, then: ask, on: egress }
audit: { sink: none }
`

func TestCheckExplainsFlowRulesAfterALabel(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "mcpwarden.yaml")
	if err := os.WriteFile(path, []byte(flowConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		out  []string
	}{
		{"mail before any untrusted input", []string{"mcp:mail:send_mail"}, 0, []string{"ALLOW  mcp:mail:send_mail", "untrusted_input is not armed in this session"}},
		{"mail after untrusted input", []string{"mcp:mail:send_mail", "--after", "untrusted_input"}, exitAsk, []string{
			"ASK  mcp:mail:send_mail", "after:      untrusted_input",
			"decided by: flow[0]: after untrusted_input then ask on egress (in flow)",
			"untrusted_input was armed by an earlier call, and the request is labelled egress",
		}},
		{"a fetch after untrusted input", []string{"mcp:web:fetch", "--after", "untrusted_input"}, 0, []string{"ALLOW  mcp:web:fetch", "the request is not labelled egress"}},
		{"an unknown label is bad input", []string{"mcp:mail:send_mail", "--after", "untrusted"}, exitUsage, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := run(t, append([]string{"check", "--config", path}, tt.args...)...)
			if code != tt.code {
				t.Errorf("check %v exited %d, want %d:\n%s%s", tt.args, code, tt.code, out, errOut)
			}
			for _, want := range tt.out {
				if !strings.Contains(out, want) {
					t.Errorf("check %v output lacks %q:\n%s", tt.args, want, out)
				}
			}
		})
	}
}
