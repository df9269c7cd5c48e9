package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/audit"
)

// runAuditCmd runs `audit args...` and returns its stdout, stderr and error.
func runAuditCmd(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := newAuditCmd()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(t.Context())
	return out.String(), errOut.String(), err
}

func writeAuditLog(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(audit.Config{Path: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	events := []audit.Event{
		{Event: audit.KindUpstream, Server: "fs", Detail: audit.UpstreamConnect},
		{Event: audit.KindDecision, Server: "fs", Tool: "mcp:fs:read_file", Decision: audit.DecisionAllow, Rule: "mcp:fs:read_*", GrantedBy: audit.GrantedByRule},
		{Event: audit.KindDecision, Server: "gh", Tool: "mcp:gh:delete_repo", Decision: audit.DecisionDeny, Rule: "mcp:gh:delete_*", GrantedBy: audit.GrantedByRule, Arguments: map[string]any{"token": "ghp_leak"}},
	}
	for _, e := range events {
		if err := l.Write(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestAuditVerifyCommand(t *testing.T) {
	t.Parallel()
	path := writeAuditLog(t)
	out, _, err := runAuditCmd(t, "verify", path)
	if err != nil || !strings.HasPrefix(out, "ok: 3 events in 1 files") {
		t.Fatalf("verify of an intact log = %q, %v", out, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	tampered := lines[0] + strings.Replace(lines[1], "allow", "deny", 1) + lines[2]
	if err := os.WriteFile(path, []byte(tampered), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = runAuditCmd(t, "verify", path)
	if err == nil || !strings.Contains(err.Error(), path+":3:") {
		t.Errorf("verify of a tampered log: got %v, want an error at %s:3", err, path)
	}
}

func TestAuditTailCommand(t *testing.T) {
	t.Parallel()
	path := writeAuditLog(t)
	tests := []struct {
		name string
		args []string
		want []string // one substring per printed line
	}{
		{"all events", []string{"tail", path}, []string{"upstream      fs connect", "ALLOW mcp:fs:read_file", "DENY  mcp:gh:delete_repo"}},
		{"by server", []string{"show", "--server", "gh", path}, []string{"mcp:gh:delete_repo"}},
		{"by decision", []string{"tail", "--decision", "allow", path}, []string{"mcp:fs:read_file"}},
		{"the last one", []string{"tail", "-n", "1", path}, []string{"mcp:gh:delete_repo"}},
		{"since an hour ago", []string{"tail", "--since", "1h", "--event", "upstream", path}, []string{"fs connect"}},
		{"as JSON", []string{"tail", "--json", "--server", "gh", path}, []string{`"token":"<redacted>"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, _, err := runAuditCmd(t, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(got) != len(tt.want) {
				t.Fatalf("got %d lines, want %d:\n%s", len(got), len(tt.want), out)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("line %d = %q, want it to contain %q", i+1, got[i], w)
				}
			}
			if strings.Contains(out, "ghp_leak") {
				t.Errorf("output leaks a secret:\n%s", out)
			}
		})
	}
	if _, _, err := runAuditCmd(t, "tail", "--decision", "maybe", path); err == nil {
		t.Error("tail accepted --decision maybe")
	}
}

func TestAuditRepairCommand(t *testing.T) {
	t.Parallel()
	path := writeAuditLog(t)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"time":"2026-12-03T10:00:00Z","ev`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := audit.Open(audit.Config{Path: path}, nil); err == nil || !strings.Contains(err.Error(), "mcpwarden audit repair "+path) {
		t.Fatalf("Open of a torn log = %v, want an error naming the repair command", err)
	}
	out, _, err := runAuditCmd(t, "repair", path)
	if err != nil {
		t.Fatalf("repair: %v (%s)", err, out)
	}
	for _, want := range []string{"moved the torn last line of " + path + " (34 bytes) to " + path + ".torn-", "ok: 4 events in 1 files"} {
		if !strings.Contains(out, want) {
			t.Errorf("repair printed %q, want %q", out, want)
		}
	}
	out, _, err = runAuditCmd(t, "repair", path)
	if err != nil || !strings.Contains(out, "nothing to repair") || !strings.Contains(out, "ok: 4 events") {
		t.Errorf("second repair = %q, %v; want nothing to repair and ok", out, err)
	}
	out, _, err = runAuditCmd(t, "tail", path)
	if err != nil || !strings.Contains(out, "lost          lost=1") {
		t.Errorf("tail after repair = %q, %v; want the lost event", out, err)
	}
}

// writeReplicaAuditLog writes n events as replica id to dir/name.
func writeReplicaAuditLog(t *testing.T, dir, name, id string, n int) string {
	t.Helper()
	path := filepath.Join(dir, name)
	l, err := audit.Open(audit.Config{Path: path}, &audit.Options{Replica: id})
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := l.Write(t.Context(), audit.Event{Event: audit.KindDecision, Server: "fs", Tool: "mcp:fs:read_file", Decision: audit.DecisionAllow, Rule: "mcp:fs:read_*", GrantedBy: audit.GrantedByRule}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestAuditVerifyCommandReportsEachReplicaLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := writeReplicaAuditLog(t, dir, "a.jsonl", "mcpwarden-a", 2)
	b := writeReplicaAuditLog(t, dir, "b.jsonl", "mcpwarden-b", 3)
	c := writeReplicaAuditLog(t, dir, "c.jsonl", "mcpwarden-c", 4)
	out, errOut, err := runAuditCmd(t, "verify", a, b, c)
	if err != nil {
		t.Fatalf("verify of three intact replica logs: %v\n%s", err, out)
	}
	for _, want := range []string{
		a + ": ok: 2 events in 1 files, replica mcpwarden-a, last sha256 ",
		b + ": ok: 3 events in 1 files, replica mcpwarden-b, last sha256 ",
		c + ": ok: 4 events in 1 files, replica mcpwarden-c, last sha256 ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("verify printed\n%s\nwant a line %q", out, want)
		}
	}
	if errOut != "" {
		t.Errorf("verify warned %q, want nothing", errOut)
	}

	// A tampered log fails; the others are still checked and reported.
	lines := strings.SplitAfter(readFile(t, b), "\n")
	tampered := lines[0] + strings.Replace(lines[1], "allow", "deny", 1) + strings.Join(lines[2:], "")
	if err := os.WriteFile(b, []byte(tampered), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err = runAuditCmd(t, "verify", a, b, c)
	if err == nil || !strings.Contains(err.Error(), "1 of 3 audit chains do not verify") {
		t.Errorf("verify with one tampered log: %v, want 1 of 3 failing", err)
	}
	for _, want := range []string{a + ": ok: 2 events", b + ": FAILED: " + b + ":3: ", c + ": ok: 4 events"} {
		if !strings.Contains(out, want) {
			t.Errorf("verify printed\n%s\nwant %q", out, want)
		}
	}
}

func TestAuditVerifyCommandWarnsOfAReplicaIDInTwoLogs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := writeReplicaAuditLog(t, dir, "a.jsonl", "mcpwarden", 1)
	b := writeReplicaAuditLog(t, dir, "b.jsonl", "mcpwarden", 1)
	_, errOut, err := runAuditCmd(t, "verify", a, b)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, `warning: replica "mcpwarden" wrote more than one of these logs (`+a+", "+b+")") {
		t.Errorf("verify warned %q, want the shared replica id named", errOut)
	}
	if _, _, err := runAuditCmd(t, "verify", "--prev", "00", a, b); err == nil {
		t.Error("verify took one --prev for two logs")
	}
	// --exact keeps its meaning: the files given are one chain.
	if _, _, err := runAuditCmd(t, "verify", "--exact", a, b); err == nil || !strings.Contains(err.Error(), b+":1:") {
		t.Errorf("verify --exact of two logs as one chain = %v, want a break at %s:1", err, b)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
