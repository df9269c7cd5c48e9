package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const limitConfig = `servers:
  mail: { url: "https://mail.test/mcp" }
policy:
  allow: ["mcp:mail:*"]
  deny: ["mcp:mail:send_mail:to=*@evil.test"]
limits:
  - { match: "mcp:mail:send_*", max: 10, per: principal, window: 1h, then: ask }
audit: { sink: none }
`

// A checkCase is one run of check and what it must print.
type checkCase struct {
	name string
	args []string
	code int
	out  []string
}

// runCheckCases runs check with config for each case.
func runCheckCases(t *testing.T, config string, tests []checkCase) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mcpwarden.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
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

func TestCheckExplainsLimits(t *testing.T) {
	t.Parallel()
	runCheckCases(t, limitConfig, []checkCase{
		{"a request within the limit is allowed and names the limit", []string{"mcp:mail:send_mail"}, 0, []string{
			"ALLOW  mcp:mail:send_mail", "limits[0]: mcp:mail:send_* max 10 per principal in 1h0m0s then ask", "request 11 in 1h0m0s per principal would be ask",
		}},
		{"the request beyond the limit is asked", []string{"mcp:mail:send_mail", "--over-limit"}, exitAsk, []string{
			"ASK  mcp:mail:send_mail", "decided by: limits[0]: mcp:mail:send_* max 10 per principal in 1h0m0s then ask (in limit)",
		}},
		{"a denied request beyond the limit stays denied", []string{"mcp:mail:send_mail", `{"to":"x@evil.test"}`, "--over-limit"}, exitDeny, []string{"DENY  mcp:mail:send_mail"}},
		{"a request no limit matches lists none", []string{"mcp:mail:list_folders", "--over-limit"}, 0, []string{"ALLOW  mcp:mail:list_folders"}},
	})
}
