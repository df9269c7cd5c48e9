package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/audit"
)

// TestAuditorVerifiesALogAndAProofWithThePublicKey walks what README shows
// an auditor: audit key prints the public key; audit verify --key
// --witness passes the log and fails it once its tail is cut; audit prove
// prints a proof that audit check-proof passes with the key alone, and
// fails once the line is edited.
func TestAuditorVerifiesALogAndAProofWithThePublicKey(t *testing.T) {
	t.Parallel()
	dir, wdir := t.TempDir(), t.TempDir()
	cfgPath := filepath.Join(dir, "mcpwarden.yaml")
	witness := filepath.Join(wdir, "witness.jsonl")
	yaml := "servers:\n  fs:\n    command: \"true\"\naudit:\n  path: audit.jsonl\n  key_file: audit.key\n  witness: " + witness + "\n  checkpoint_every: 5\n"
	if err := os.WriteFile(cfgPath, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	pub, _, err := runAuditCmd(t, "key", "--config", cfgPath)
	if err != nil || !strings.HasPrefix(pub, audit.KeyName+"+") {
		t.Fatalf("audit key: %q, %v", pub, err)
	}
	pub = strings.TrimSpace(pub)
	k, err := audit.LoadSigningKey(filepath.Join(dir, "audit.key"))
	if err != nil || k.Public != pub {
		t.Fatalf("the key file holds %q, %v; audit key printed %q", k.Public, err, pub)
	}
	logPath := filepath.Join(dir, "audit.jsonl")
	l, err := audit.Open(audit.Config{Path: logPath, Witness: witness, CheckpointEvery: 5}, &audit.Options{Signer: k.Signer})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		l.Write(context.Background(), audit.Event{Event: audit.KindDecision, Tool: "mcp:fs:read", Decision: audit.DecisionAllow, Detail: strings.Repeat("x", i)})
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	out, _, err := runAuditCmd(t, "verify", "--key", pub, "--witness", witness, logPath)
	if err != nil || !strings.Contains(out, "3 checkpoints") || !strings.Contains(out, "witness's checkpoint of 14 lines matches") {
		t.Fatalf("verify: %q, %v", out, err)
	}
	out, _, err = runAuditCmd(t, "verify", "--json", "--key", pub, logPath)
	var res map[string]any
	if err != nil || json.Unmarshal([]byte(out), &res) != nil || res["ok"] != true || res["checkpoints"] != 3.0 {
		t.Fatalf("verify --json: %q, %v", out, err)
	}

	proof, _, err := runAuditCmd(t, "prove", logPath, "7")
	if err != nil {
		t.Fatalf("prove: %v", err)
	}
	proofPath := filepath.Join(t.TempDir(), "proof.json")
	os.WriteFile(proofPath, []byte(proof), 0o600)
	out, _, err = runAuditCmd(t, "check-proof", pub, proofPath)
	if err != nil || !strings.HasPrefix(out, "ok: line 7 of mcpwarden/audit is in its checkpoint of 10 lines") {
		t.Fatalf("check-proof: %q, %v", out, err)
	}
	os.WriteFile(proofPath, []byte(strings.Replace(proof, "mcp:fs:read", "mcp:fs:list", 1)), 0o600)
	if out, _, err = runAuditCmd(t, "check-proof", pub, proofPath); err == nil {
		t.Errorf("check-proof of an edited line: %q, want it refused", out)
	}

	data, _ := os.ReadFile(logPath)
	lines := strings.SplitAfter(string(data), "\n")
	os.WriteFile(logPath, []byte(strings.Join(lines[:len(lines)-3], "")), 0o600)
	out, _, err = runAuditCmd(t, "verify", "--key", pub, "--witness", witness, logPath)
	if err == nil || !strings.Contains(err.Error(), "log cut short") {
		t.Errorf("verify of a cut log: %q, %v; want it cut short", out, err)
	}
}
