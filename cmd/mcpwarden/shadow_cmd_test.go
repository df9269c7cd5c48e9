package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/audit"
)

// writeShadowConfig writes a config of two servers, fs in shadow mode by
// the top-level enforce and git enforced by its own, whose policy denies
// delete_* outright and asks about write_*.
func writeShadowConfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mcpwarden.yaml")
	cfg := `enforce: shadow
servers:
  fs:
    command: "true"
  git:
    command: "true"
    enforce: enforce
policy:
  default: allow
  deny: ["mcp:*:delete_*"]
  ask: ["mcp:*:write_*"]
audit: { sink: none }
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCheckNotesThatShadowModeWouldForwardAndKeepsTheDecisionsExitStatus(t *testing.T) {
	t.Parallel()
	path := writeShadowConfig(t)
	tests := []struct {
		name       string
		call       string
		args       string
		wantCode   int
		wantShadow bool
	}{
		{"a would-be deny of a shadowed server", "mcp:fs:delete_file", `{"path":"/tmp/x"}`, exitDeny, true},
		{"a would-be ask of a shadowed server", "mcp:fs:write_file", `{"path":"/tmp/x"}`, exitAsk, true},
		{"an allow of a shadowed server", "mcp:fs:read_file", `{"path":"/tmp/x"}`, 0, false},
		{"a deny of the enforced server", "mcp:git:delete_branch", `{}`, exitDeny, false},
		{"self-protection in a shadowed server", "mcp:fs:write_file", `{"path":"` + path + `"}`, exitDeny, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := run(t, "check", "--config", path, tt.call, tt.args)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d\n%s%s", code, tt.wantCode, out, errOut)
			}
			if got := strings.Contains(out, "shadow mode: would be forwarded"); got != tt.wantShadow {
				t.Errorf("notes shadow mode: %v, want %v\n%s", got, tt.wantShadow, out)
			}
			code, out, _ = run(t, "check", "--json", "--config", path, tt.call, tt.args)
			var rep struct {
				Decision string `json:"decision"`
				Shadow   bool   `json:"shadow"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("check --json: %v\n%s", err, out)
			}
			if code != tt.wantCode || rep.Shadow != tt.wantShadow {
				t.Errorf("check --json exit %d shadow %v, want %d and %v", code, rep.Shadow, tt.wantCode, tt.wantShadow)
			}
		})
	}
}

func TestValidateSaysWhereShadowModeIsOn(t *testing.T) {
	t.Parallel()
	path := writeShadowConfig(t)
	code, out, errOut := run(t, "validate", "--offline", "--config", path)
	if code != 0 || !strings.Contains(out, "shadow mode: on for servers fs (enforce: shadow)") {
		t.Errorf("validate exited %d with\n%s%s\nwant it to say shadow mode is on for fs", code, out, errOut)
	}
	code, out, _ = run(t, "validate", "--offline", "--json", "--config", path)
	var rep struct {
		Shadow *struct {
			Servers  []string `json:"servers"`
			Profiles []string `json:"profiles"`
		} `json:"shadow"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("validate --json: %v\n%s", err, out)
	}
	if code != 0 || rep.Shadow == nil || strings.Join(rep.Shadow.Servers, ",") != "fs" {
		t.Errorf("validate --json exit %d shadow %+v, want servers [fs]\n%s", code, rep.Shadow, out)
	}
}

func TestValidateSaysNothingOfShadowModeWhenItIsOff(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "mcpwarden.yaml")
	if err := os.WriteFile(path, []byte("servers:\n  fs:\n    command: \"true\"\naudit: { sink: none }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, out, _ := run(t, "validate", "--offline", "--config", path)
	if strings.Contains(out, "shadow") {
		t.Errorf("validate of a config without shadow mode mentions it:\n%s", out)
	}
	_, out, _ = run(t, "validate", "--offline", "--json", "--config", path)
	if strings.Contains(out, `"shadow"`) {
		t.Errorf("validate --json of a config without shadow mode has a shadow key:\n%s", out)
	}
}

func TestToolsMarksWhatShadowModeWouldForward(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "mcpwarden.yaml")
	cfg := "enforce: shadow\nservers:\n  fs:\n    command: \"true\"\n  git:\n    command: \"true\"\n    enforce: enforce\npolicy:\n  deny: [\"mcp:*:*\"]\naudit: { sink: none }\n"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "tools", "--offline", "--config", path)
	if code != 0 {
		t.Fatalf("tools exited %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"allow (shadow: would deny)", "hidden", "shadow mode: on for servers fs"} {
		if !strings.Contains(out, want) {
			t.Errorf("tools lacks %q:\n%s", want, out)
		}
	}
	_, out, _ = run(t, "tools", "--offline", "--json", "--config", path)
	var rep struct {
		Tools []struct {
			Server   string `json:"server"`
			Decision string `json:"decision"`
			Shadow   bool   `json:"shadow"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("tools --json: %v\n%s", err, out)
	}
	for _, r := range rep.Tools {
		want := map[string]string{"fs": "deny shadow", "git": "hidden"}[r.Server]
		got := r.Decision
		if r.Shadow {
			got += " shadow"
		}
		if got != want {
			t.Errorf("server %s: %q, want %q", r.Server, got, want)
		}
	}
}

func TestAuditTailShowsShadowedDecisionsAndTheLogVerifies(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(audit.Config{Path: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []audit.Event{
		{Event: audit.KindDecision, Server: "fs", Tool: "mcp:fs:delete_file", Shadow: true, Decision: audit.DecisionDeny, Rule: "mcp:fs:delete_*", GrantedBy: audit.GrantedByShadow, Outcome: audit.OutcomeAllowed},
		{Event: audit.KindDecision, Server: "fs", Tool: "mcp:fs:write_file", Shadow: true, Decision: audit.DecisionAsk, Rule: "mcp:fs:write_*", GrantedBy: audit.GrantedByShadow, Outcome: audit.OutcomeAllowed},
		{Event: audit.KindDecision, Server: "fs", Tool: "mcp:fs:read_file", Shadow: true, Decision: audit.DecisionAllow, Rule: "mcp:fs:read_*", GrantedBy: audit.GrantedByRule},
		{Event: audit.KindDecision, Server: "git", Tool: "mcp:git:push", Decision: audit.DecisionDeny, Rule: "mcp:git:push", GrantedBy: audit.GrantedByRule},
	} {
		if err := l.Write(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if out, _, err := runAuditCmd(t, "verify", path); err != nil || !strings.HasPrefix(out, "ok: 4 events") {
		t.Fatalf("verify = %q, %v", out, err)
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"every decision", []string{"tail", path}, []string{"ALLOW (shadow: would deny) mcp:fs:delete_file", "ALLOW (shadow: would ask) mcp:fs:write_file", "ALLOW (shadow) mcp:fs:read_file", "DENY  mcp:git:push"}},
		{"the would-be denials", []string{"tail", "--decision", "deny", path}, []string{"(shadow: would deny) mcp:fs:delete_file", "DENY  mcp:git:push"}},
		{"what was let through", []string{"tail", "--outcome", "allowed", path}, []string{"mcp:fs:delete_file", "mcp:fs:write_file"}},
	}
	for _, tt := range tests {
		out, _, err := runAuditCmd(t, tt.args...)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(got) != len(tt.want) {
			t.Fatalf("%s: got %d lines, want %d:\n%s", tt.name, len(got), len(tt.want), out)
		}
		for i, w := range tt.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s: line %d = %q, want it to contain %q", tt.name, i+1, got[i], w)
			}
		}
	}
}
