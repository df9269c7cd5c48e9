package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/app"
	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/rules"
)

// policyConfig is a config for policy suggest and diff; $WS is the
// workspace. Its global policy has no allow list, so that suggest's
// fragment can be pasted under it as is.
const policyConfig = `servers:
  fs:
    command: /bin/true
    cwd: $WS
    policy:
      allow: ["mcp:fs:list_*"]
  web:
    command: /bin/true
policy:
  default: ask
  workspace: ["$WS"]
  deny: ["mcp:*:*:@path=**/.env"]
  ask: ["mcp:fs:write_file"]
audit: { sink: none }
`

// recordedCall is one request as the proxy recorded it.
type recordedCall struct {
	tool, decision, rule string
	grantedBy            audit.GrantedBy
	outcome              audit.Outcome
	args                 map[string]any
}

// writePolicyFixture writes policyConfig and an audit log of calls, written
// by audit.Log as the proxy writes it, into a new directory, and returns
// the config's path, the log's and the workspace.
func writePolicyFixture(t *testing.T, calls []recordedCall) (cfg, log, ws string) {
	t.Helper()
	dir := t.TempDir()
	ws = filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg = filepath.Join(dir, "mcpwarden.yaml")
	if err := os.WriteFile(cfg, []byte(strings.ReplaceAll(policyConfig, "$WS", ws)), 0o600); err != nil {
		t.Fatal(err)
	}
	log = filepath.Join(dir, "audit.jsonl")
	l, err := audit.Open(audit.Config{Path: log, Unsigned: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, c := range calls {
		server, _, _ := strings.Cut(strings.TrimPrefix(c.tool, "mcp:"), ":")
		args := map[string]any{}
		for k, v := range c.args {
			if s, ok := v.(string); ok {
				v = strings.ReplaceAll(s, "$WS", ws)
			}
			args[k] = v
		}
		e := audit.Event{Event: audit.KindDecision, Server: server, Method: "tools/call", Tool: c.tool, Decision: c.decision, Rule: c.rule,
			GrantedBy: c.grantedBy, Outcome: c.outcome, Arguments: args}
		if err := l.Write(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	return cfg, log, ws
}

// aSession is a session of the reference servers' kind of calls: reads in
// a folder, a write (asked by a rule), a secret refused by a deny rule, an
// ask a person refused, a fetch, a command and a connection.
var aSession = []recordedCall{
	{"mcp:fs:read_text_file", "ask", "default", audit.GrantedByUserOnce, audit.OutcomeAllowed, map[string]any{"path": "$WS/src/main.go"}},
	{"mcp:fs:read_text_file", "ask", "default", audit.GrantedByUserOnce, audit.OutcomeAllowed, map[string]any{"path": "$WS/src/util/strings.go"}},
	{"mcp:fs:read_text_file", "ask", "default", audit.GrantedByUserSession, audit.OutcomeAllowed, map[string]any{"path": "$WS/src/main.go"}},
	{"mcp:fs:list_directory", "allow", "mcp:fs:list_*", audit.GrantedByRule, audit.OutcomeNone, map[string]any{"path": "$WS"}},
	{"mcp:fs:write_file", "ask", "mcp:fs:write_file", audit.GrantedByUserOnce, audit.OutcomeAllowed, map[string]any{"path": "$WS/out.txt", "content": "x"}},
	{"mcp:fs:read_text_file", "deny", "mcp:*:*:@path=**/.env", audit.GrantedByRule, audit.OutcomeNone, map[string]any{"path": "$WS/.env"}},
	{"mcp:fs:move_file", "ask", "default", audit.GrantedByUserDenied, audit.OutcomeRefused, map[string]any{"source": "a", "destination": "b"}},
	{"mcp:web:fetch", "ask", "default", audit.GrantedByUserOnce, audit.OutcomeAllowed, map[string]any{"url": "https://go.dev/doc/"}},
	{"mcp:web:fetch", "ask", "default", audit.GrantedByUserOnce, audit.OutcomeAllowed, map[string]any{"url": "https://go.dev/ref/spec"}},
	{"mcp:web:run_command", "ask", "default", audit.GrantedByUserOnce, audit.OutcomeAllowed, map[string]any{"command": "go test ./..."}},
	{"mcp:web:network/connect", "ask", "default", audit.GrantedByTimeout, audit.OutcomeRefused, map[string]any{"host": "proxy.golang.org", "port": 443}},
}

// TestSuggestedPolicyLoadsWithoutWarningsAndAllowsWhatItCovers pastes
// suggest's output under the config's policy key, loads it, and decides
// with Setup.Decide (as check does): every recorded call the rules cover
// is allowed, with no new warning, while a neighbour of each (a sibling
// folder, another host, a longer command, another port) and what a deny
// rule or a person refused are not.
func TestSuggestedPolicyLoadsWithoutWarningsAndAllowsWhatItCovers(t *testing.T) {
	t.Parallel()
	cfgPath, log, ws := writePolicyFixture(t, aSession)
	code, out, errOut := run(t, "policy", "suggest", "--config", cfgPath, log)
	if code != 0 {
		t.Fatalf("policy suggest exited %d: %s", code, errOut)
	}
	for _, want := range []string{
		`- "mcp:fs:read_text_file:path=` + ws + `/src/**"`,
		`- "mcp:web:fetch:url.host=go.dev:url.scheme=https"`,
		`- "mcp:web:run_command:command=go test ./..."`,
		`- "mcp:web:network/connect:host=proxy.golang.org:port=443"`,
		"#   2× mcp:fs:read_text_file {\"path\":\"" + ws + "/src/main.go\"}",
		"# refused by a deny rule (mcp:*:*:@path=**/.env); not suggested — 1 request:",
		"# refused by a person when asked; not suggested — 1 request:",
		"# asked by the ask rule mcp:fs:write_file, which no allow rule overrides; not suggested — 1 request:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("suggest's output lacks %q:\n%s", want, out)
		}
	}

	before, err := config.LoadOffline(cfgPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	pasted := filepath.Join(filepath.Dir(cfgPath), "suggested.yaml")
	text, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	indented := "  " + strings.ReplaceAll(strings.TrimSuffix(out, "\n"), "\n", "\n  ") + "\n"
	text = []byte(strings.Replace(string(text), "policy:\n  default: ask\n", "policy:\n  default: ask\n"+indented, 1))
	if err := os.WriteFile(pasted, text, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadOffline(pasted, nil)
	if err != nil {
		t.Fatalf("the config with the suggestions pasted does not load: %v\n%s", err, text)
	}
	if diff := gocmp.Diff(warnings(before.Warnings, before.Lint()), warnings(cfg.Warnings, cfg.Lint())); diff != "" {
		t.Errorf("the suggestions add warnings (-before +after):\n%s", diff)
	}
	st, err := app.NewSetup(cfg, filepath.Dir(pasted))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		tool    string
		args    map[string]any
		allowed bool
	}{
		{"a recorded read", "read_text_file", map[string]any{"path": ws + "/src/main.go"}, true},
		{"another recorded read", "read_text_file", map[string]any{"path": ws + "/src/util/strings.go"}, true},
		{"a recorded fetch", "fetch", map[string]any{"url": "https://go.dev/doc/"}, true},
		{"the recorded command", "run_command", map[string]any{"command": "go test ./..."}, true},
		{"the recorded connection", "network/connect", map[string]any{"host": "proxy.golang.org", "port": json.Number("443")}, true},
		{"a sibling folder", "read_text_file", map[string]any{"path": ws + "/docs/x.md"}, false},
		{"the workspace above the folder", "read_text_file", map[string]any{"path": ws + "/main.go"}, false},
		{"a secret in the folder (a deny rule)", "read_text_file", map[string]any{"path": ws + "/src/.env"}, false},
		{"another host", "fetch", map[string]any{"url": "https://go.dev.evil.example/doc/"}, false},
		{"another scheme", "fetch", map[string]any{"url": "http://go.dev/doc/"}, false},
		{"a longer command", "run_command", map[string]any{"command": "go test ./...; curl evil.example"}, false},
		{"another port", "network/connect", map[string]any{"host": "proxy.golang.org", "port": json.Number("80")}, false},
		{"the move a person refused", "move_file", map[string]any{"source": "a", "destination": "b"}, false},
		{"the write an ask rule asks about", "write_file", map[string]any{"path": ws + "/out.txt", "content": "x"}, false},
	}
	for _, tt := range tests {
		server := "web"
		if strings.Contains(tt.tool, "_file") {
			server = "fs"
		}
		v := st.Decide(rules.Call{Server: server, Tool: tt.tool, Arguments: tt.args}, false).Verdict
		if got := v.Decision == rules.Allow; got != tt.allowed {
			t.Errorf("%s: %v by %s, want allowed %v", tt.name, v.Decision, v.Rule, tt.allowed)
		}
	}
}

func warnings(load []string, lint []config.Warning) []string {
	out := append([]string(nil), load...)
	for _, w := range lint {
		out = append(out, w.String())
	}
	return out
}

func TestPolicyDiffExitsLikeDiff(t *testing.T) {
	t.Parallel()
	cfgPath, log, ws := writePolicyFixture(t, aSession)
	same := filepath.Join(filepath.Dir(cfgPath), "same.yaml")
	wider := filepath.Join(filepath.Dir(cfgPath), "wider.yaml")
	text, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(same, text, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wider, []byte(strings.Replace(string(text), "  default: ask\n", "  default: ask\n  allow: [\"mcp:web:*\"]\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"no change exits 0", []string{"--config", cfgPath, "--against", same, log}, 0, "11 recorded requests replayed: 0 decisions change"},
		{"a widening change exits 1, marked", []string{"--config", cfgPath, "--against", wider, log}, 1, "WIDENS   ALLOW by mcp:web:* (in policy): 3"},
		{"without --against is bad usage", []string{"--config", cfgPath, log}, exitUsage, ""},
		{"a missing log is bad input", []string{"--config", cfgPath, "--against", same, filepath.Join(ws, "none.jsonl")}, exitUsage, ""},
		{"a config that does not load is bad usage", []string{"--config", cfgPath, "--against", log, log}, exitUsage, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := run(t, append([]string{"policy", "diff"}, tt.args...)...)
			if code != tt.code || !strings.Contains(out, tt.out) {
				t.Errorf("exit %d, want %d; stdout:\n%s\nstderr: %s\nwant %q", code, tt.code, out, errOut, tt.out)
			}
		})
	}
}

// TestPolicyJSONOutputMatchesTheGoldenFiles: policy suggest --json and
// policy diff --json against testdata/golden (go test -run TestPolicyJSON
// -update rewrites them).
func TestPolicyJSONOutputMatchesTheGoldenFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		args   []string
		code   int
		golden string
	}{
		{"suggest", []string{"policy", "suggest", "--json"}, 0, "policy-suggest.json"},
		{"diff", []string{"policy", "diff", "--json", "--against", "$WIDER"}, 1, "policy-diff.json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfgPath, log, _ := writePolicyFixture(t, aSession)
			dir := filepath.Dir(cfgPath)
			wider := filepath.Join(dir, "wider.yaml")
			text, err := os.ReadFile(cfgPath)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(wider, []byte(strings.Replace(string(text), "  default: ask\n", "  default: ask\n  allow: [\"mcp:web:*\", \"mcp:fs:read_*\"]\n", 1)), 0o600); err != nil {
				t.Fatal(err)
			}
			args := append(append([]string(nil), tc.args...), "--config", cfgPath, log)
			for i, a := range args {
				args[i] = strings.ReplaceAll(a, "$WIDER", wider)
			}
			code, out, errOut := run(t, args...)
			if code != tc.code {
				t.Fatalf("%v exited %d, want %d; stderr: %s", tc.args, code, tc.code, errOut)
			}
			got := strings.ReplaceAll(out, dir, "$DIR")
			matchesGolden(t, tc.golden, got)
		})
	}
}
