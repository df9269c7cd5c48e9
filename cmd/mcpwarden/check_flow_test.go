package main

import "testing"

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
	runCheckCases(t, flowConfig, []checkCase{
		{"mail before any untrusted input", []string{"mcp:mail:send_mail"}, 0, []string{"ALLOW  mcp:mail:send_mail", "untrusted_input is not armed in this session"}},
		{"mail after untrusted input", []string{"mcp:mail:send_mail", "--after", "untrusted_input"}, exitAsk, []string{
			"ASK  mcp:mail:send_mail", "after:      untrusted_input",
			"decided by: flow[0]: after untrusted_input then ask on egress (in flow)",
			"untrusted_input was armed by an earlier call, and the request is labelled egress",
		}},
		{"a fetch after untrusted input", []string{"mcp:web:fetch", "--after", "untrusted_input"}, 0, []string{"ALLOW  mcp:web:fetch", "the request is not labelled egress"}},
		{"an unknown label is bad input", []string{"mcp:mail:send_mail", "--after", "untrusted"}, exitUsage, nil},
	})
}

const labelFactConfig = `servers:
  web: { url: "https://web.test/mcp" }
  fs: { url: "https://fs.test/mcp" }
policy:
  deny: ["mcp:fs:write_file:@label=private"]
  allow: ["mcp:web:*", "mcp:fs:*"]
labels:
  private: ["mcp:fs:read_file"]
audit: { sink: none }
`

func TestCheckExplainsLabelFactAfterALabel(t *testing.T) {
	t.Parallel()
	runCheckCases(t, labelFactConfig, []checkCase{
		{"a write before private data was read", []string{"mcp:fs:write_file"}, 0, []string{"ALLOW  mcp:fs:write_file"}},
		{"a write after private data was read", []string{"mcp:fs:write_file", "--after", "private"}, exitDeny, []string{
			"DENY  mcp:fs:write_file", "decided by: mcp:fs:write_file:@label=private",
		}},
	})
}
