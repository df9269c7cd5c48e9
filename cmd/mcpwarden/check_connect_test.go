package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const connectConfig = `servers:
  github: { url: "https://github.test/mcp" }
policy:
  default: deny
  deny: ["mcp:github:network/connect:host=127.0.0.1"]
  allow:
    - "mcp:github:network/connect:host=api.github.com:port=443"
    - "mcp:github:network/connect:host=10.0.0.5:port=8080"
    - "mcp:github:network/connect:host=*:port=80"
audit: { sink: none }
`

// TestCheckExplainsAConnection: check decides mcp:<server>:network/connect
// as the proxy does, the host normalised first, so that no spelling of a
// host or address checks differently from how it is decided.
func TestCheckExplainsAConnection(t *testing.T) {
	t.Parallel()
	runCheckCases(t, connectConfig, []checkCase{
		{"an allowed host and port is allowed", []string{"mcp:github:network/connect", `{"host":"api.github.com","port":443}`}, 0, []string{
			"ALLOW  mcp:github:network/connect", "decided by: mcp:github:network/connect:host=api.github.com:port=443",
		}},
		{"upper case and a trailing dot are the same host", []string{"mcp:github:network/connect", `{"host":"API.GitHub.com.","port":443}`}, 0, []string{"ALLOW"}},
		{"the host and port as --arg strings", []string{"mcp:github:network/connect", "--arg", "host=api.github.com", "--arg", "port=443"}, 0, []string{"ALLOW"}},
		{"another port falls to the default", []string{"mcp:github:network/connect", `{"host":"api.github.com","port":22}`}, exitDeny, []string{"DENY"}},
		{"a hex spelling of a denied address is denied", []string{"mcp:github:network/connect", `{"host":"0x7f.1","port":443}`}, exitDeny, []string{
			"decided by: mcp:github:network/connect:host=127.0.0.1",
		}},
		{"a decimal spelling of a denied address is denied", []string{"mcp:github:network/connect", `{"host":"2130706433","port":443}`}, exitDeny, []string{"DENY"}},
		{"host=* does not open the metadata address", []string{"mcp:github:network/connect", `{"host":"169.254.169.254","port":80}`}, exitDeny, []string{
			"169.254.169.254 is a cloud metadata address", "mcp:github:network/connect:host=169.254.169.254:port=80",
		}},
		{"host=* does not open a private address's decimal spelling", []string{"mcp:github:network/connect", `{"host":"167772165","port":80}`}, exitDeny, []string{"10.0.0.5 is a private address"}},
		{"a rule naming a private address opens it", []string{"mcp:github:network/connect", `{"host":"10.0.0.5","port":8080}`}, 0, []string{"ALLOW"}},
		{"a port out of range is bad input", []string{"mcp:github:network/connect", `{"host":"api.github.com","port":70000}`}, exitUsage, nil},
		{"no port is bad input", []string{"mcp:github:network/connect", `{"host":"api.github.com"}`}, exitUsage, nil},
		{"another argument is bad input", []string{"mcp:github:network/connect", `{"host":"api.github.com","port":443,"path":"/"}`}, exitUsage, nil},
		{"no host is bad input", []string{"mcp:github:network/connect", `{"port":443}`}, exitUsage, nil},
	})
}

const connectLintConfig = `servers:
  fs:
    command: %EXE%
    env: { %ENV%: "catalog" }
policy:
  allow: ["mcp:fs:network/connect:host=api.github.com:port=443", "mcp:fs:*"]
labels:
  untrusted_input: ["mcp:fs:resources/read", "mcp:fs:prompts/get", "mcp:fs:*"]
  egress: ["mcp:*:network/connect"]
flow:
  - { after: untrusted_input, then: ask, on: egress }
audit: { sink: none }
`

// TestValidateKnowsConnectRulesAndLabels: a rule and a label naming
// network/connect are not reported as matching no tool.
func TestValidateKnowsConnectRulesAndLabels(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.NewReplacer("%EXE%", quoteYAML(exe), "%ENV%", standInEnv).Replace(connectLintConfig)
	path := filepath.Join(t.TempDir(), "mcpwarden.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "validate", "--config", path)
	if code != 0 {
		t.Fatalf("validate exited %d: %s%s", code, out, errOut)
	}
	if strings.Contains(out, "network/connect") {
		t.Errorf("validate warns about network/connect:\n%s", out)
	}
}
